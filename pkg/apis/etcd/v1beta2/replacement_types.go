package v1beta2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberReplacementSpec says when the operator replaces a voting member whose etcd stays
// unhealthy (its container crash-loops, etcd refuses its data dir, or it never answers) while
// the rest of the cluster is healthy: the member is removed through the membership API, its
// pod deleted, and a fresh member on a fresh volume added in its place. The old volume is kept,
// listed in status.replacedVolumes, until a person deletes it or volumeRetentionSeconds pass.
// On by default; docs/etcdcluster.md, "Bad members replaced".
type MemberReplacementSpec struct {
	// disabled turns replacement off: an unhealthy member is waited for and reported
	// (Available False, MemberUnhealthy) until a person acts.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// afterSeconds is how long a member's pod must have been running without its etcd ready
	// before it is replaced: longer than the slowest start you expect (a large data dir
	// loads for seconds per GiB). Default 300; at least 30.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	// +optional
	AfterSeconds *int32 `json:"afterSeconds,omitempty"`

	// volumeRetentionSeconds is how long the volume of a replaced member is kept before the
	// operator deletes it. Unset: it is kept until a person deletes it (or the cluster is
	// deleted, which deletes every volume it owns).
	// +kubebuilder:validation:Minimum=0
	// +optional
	VolumeRetentionSeconds *int64 `json:"volumeRetentionSeconds,omitempty"`

	// corruptionCheckSeconds turns on etcd's own corruption checks and sets how often the
	// leader runs its periodic one: it compares every member's hash of the key-value store at
	// one revision (etcd's --corrupt-check-time), and besides it compares the hashes recorded
	// at each compaction (etcd's compact hash check, every minute). A mismatch raises etcd's
	// CORRUPT alarm, which stops every read and write of the cluster. The operator then
	// reads every member's hash itself and, when exactly one voting member differs from the
	// hash all the others share at the same revision, replaces that member (its volume kept,
	// as above) and clears the alarm; otherwise it reports AlarmRaised with the hashes and
	// waits for a person. Unset: no check (setting or changing it rolls the members). At
	// least 5; etcd's own suggestion is a few minutes or more on a large database, as each
	// check hashes the whole key space.
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=86400
	// +optional
	CorruptionCheckSeconds *int32 `json:"corruptionCheckSeconds,omitempty"`
}

// CorruptionCheck is how often etcd's periodic corruption check runs; ok false: off.
func (c *EtcdCluster) CorruptionCheck() (time.Duration, bool) {
	r := c.Spec.MemberReplacement
	if r == nil || r.CorruptionCheckSeconds == nil {
		return 0, false
	}
	return time.Duration(*r.CorruptionCheckSeconds) * time.Second, true
}

// DefaultReplaceAfterSeconds is spec.memberReplacement.afterSeconds when unset.
const DefaultReplaceAfterSeconds = 300

// ReplaceAfter is how long a member stays unhealthy before it is replaced; 0: never.
func (c *EtcdCluster) ReplaceAfter() time.Duration {
	r := c.Spec.MemberReplacement
	switch {
	case r == nil:
		return DefaultReplaceAfterSeconds * time.Second
	case r.Disabled:
		return 0
	case r.AfterSeconds != nil:
		return time.Duration(*r.AfterSeconds) * time.Second
	}
	return DefaultReplaceAfterSeconds * time.Second
}

// ReplacedVolumeRetention is how long a replaced member's volume is kept; ok false: until a
// person deletes it.
func (c *EtcdCluster) ReplacedVolumeRetention() (d time.Duration, ok bool) {
	r := c.Spec.MemberReplacement
	if r == nil || r.VolumeRetentionSeconds == nil {
		return 0, false
	}
	return time.Duration(*r.VolumeRetentionSeconds) * time.Second, true
}

// Annotations of the volume of a replaced member.
const (
	// AnnotationReplacedAt is when the member on the volume was replaced (RFC 3339): the
	// volume is no longer a member's and is never reused.
	AnnotationReplacedAt = "etcd.database.coreos.com/replaced-at"
	// AnnotationReplacedMemberID is the etcd member ID (hex) that ran on the volume.
	AnnotationReplacedMemberID = "etcd.database.coreos.com/replaced-member-id"
)

// ReplacedVolume is the kept volume of a member the operator replaced.
type ReplacedVolume struct {
	// name is the PersistentVolumeClaim's (also the replaced member's name).
	Name string `json:"name"`
	// memberID is the etcd member ID that ran on it (hex).
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// replacedAt is when the member was replaced.
	// +optional
	ReplacedAt *metav1.Time `json:"replacedAt,omitempty"`
	// deleteAfter is when the operator deletes the volume (spec.memberReplacement.
	// volumeRetentionSeconds); unset: it stays until a person deletes it.
	// +optional
	DeleteAfter *metav1.Time `json:"deleteAfter,omitempty"`
}

// ReasonMemberReplaced: a member whose etcd stayed unhealthy while its peers were healthy was
// removed and is being replaced by a fresh one (spec.memberReplacement).
const ReasonMemberReplaced = "MemberReplaced"
