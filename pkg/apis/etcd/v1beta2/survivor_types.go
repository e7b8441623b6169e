package v1beta2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SurvivorRecoverySpec is the opt-in recovery of a cluster with volumes that lost quorum for
// good from what its surviving members still hold, as etcd's own disaster-recovery guide does
// by hand: when the volumes (PersistentVolumeClaims) of a majority of the voting members are
// gone, so that those members can never come back, for at least afterSeconds, the operator
// compares the surviving members (each must answer its status, leader or not), keeps the one
// with the highest raft committed index, restarts it once with --force-new-cluster (a cluster
// of that one member, its data, revisions and leases kept), and grows the cluster back to
// spec.size through the membership API with fresh members on fresh volumes. The other
// survivors' volumes are kept (status.replacedVolumes). Writes acknowledged by the lost members
// only are lost; status.lastSurvivorRecovery and a Warning event say which member was kept, at
// which revision, and why.
//
// It never acts while a majority of the voting members still have their volumes (their pods
// pending on a NotReady node, a network partition: they may come back), while a surviving
// member does not answer (its data may be the newest), or a second time before the cluster is
// back at its full size after the first. docs/runbooks/quorum-loss.md compares it with a
// restore from a backup.
type SurvivorRecoverySpec struct {
	// afterSeconds is how long the majority's volumes must have been gone, with quorum lost,
	// before the operator acts: time for a person to look first. Default 300; at least 30.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	// +optional
	AfterSeconds *int32 `json:"afterSeconds,omitempty"`
}

// DefaultSurvivorRecoveryAfterSeconds is spec.survivorRecovery.afterSeconds when unset.
const DefaultSurvivorRecoveryAfterSeconds = 300

// SurvivorRecoveryAfter is how long quorum must have been lost with a majority's volumes gone
// before the operator recovers from the survivors; 0: never (spec.survivorRecovery unset).
func (c *EtcdCluster) SurvivorRecoveryAfter() time.Duration {
	s := c.Spec.SurvivorRecovery
	switch {
	case s == nil:
		return 0
	case s.AfterSeconds != nil:
		return time.Duration(*s.AfterSeconds) * time.Second
	}
	return DefaultSurvivorRecoveryAfterSeconds * time.Second
}

// AnnotationForceNewCluster, on the volume of the member a survivor recovery keeps, is when
// the operator chose it (RFC 3339): its pod is made with --force-new-cluster until the member
// stands alone, then the annotation is removed and the pod made again without the flag. On a
// member pod it says the pod runs with the flag.
const AnnotationForceNewCluster = "etcd.database.coreos.com/force-new-cluster"

// AnnotationRecreateVersion, on a member's volume, is the etcd version its pod is made again
// with: a downgrade that must make a pod again (its flags are unknown to the older release)
// records it before it evicts the pod. During a downgrade any other pod made again on its
// volume runs the newer release, which reads data of either.
const AnnotationRecreateVersion = "etcd.database.coreos.com/recreate-version"

// SurvivorRecoveryRecord is what a recovery from the survivors kept and lost.
type SurvivorRecoveryRecord struct {
	// member is the surviving member that was kept (restarted with --force-new-cluster).
	Member string `json:"member"`
	// memberID is its etcd member ID (hex).
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// revision is the store revision it held: the cluster goes on from there.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// raftIndex is its raft committed index, the highest of the survivors.
	// +optional
	RaftIndex uint64 `json:"raftIndex,omitempty"`
	// lastRevision is the highest revision the operator saw before the loss
	// (status.lastRevision); lastRevision - revision is a lower bound of the revisions lost
	// (0 or less: none that the operator saw).
	// +optional
	LastRevision int64 `json:"lastRevision,omitempty"`
	// candidates describes every surviving member compared, as "<name> (raft index <i>,
	// revision <r>)".
	// +optional
	Candidates []string `json:"candidates,omitempty"`
	// lostMembers are the voting members whose volumes were gone.
	// +optional
	LostMembers []string `json:"lostMembers,omitempty"`
	// quorumLostAt is when the operator first saw quorum lost with those volumes gone.
	// +optional
	QuorumLostAt *metav1.Time `json:"quorumLostAt,omitempty"`
	// startedAt is when the operator chose the member.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// completedAt is when the cluster was back at its full size with every member healthy;
	// unset while the recovery is under way (no second recovery starts meanwhile).
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// Reasons of a recovery from the survivors.
const (
	// ReasonSurvivorRecovery: the operator keeps the surviving member with the newest data and
	// restarts it alone with --force-new-cluster (spec.survivorRecovery).
	ReasonSurvivorRecovery = "SurvivorRecovery"
	// ReasonSurvivorRecoveryCompleted: the cluster recovered from a survivor is back at its full
	// size with every member healthy.
	ReasonSurvivorRecoveryCompleted = "SurvivorRecoveryCompleted"
)
