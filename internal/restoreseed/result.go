package restoreseed

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Outcomes of the seed's restore step.
const (
	OutcomeRestored        = "Restored"
	OutcomeAlreadyRestored = "AlreadyRestored"
	OutcomeFailed          = "Failed"
)

// Result is what the restore step reports through its termination message (at most 4096 bytes).
type Result struct {
	// Outcome is Restored, AlreadyRestored or Failed.
	Outcome string `json:"outcome"`
	// Reason is an EtcdRestore condition reason when Outcome is Failed.
	Reason string `json:"reason,omitempty"`
	// Message says what happened for a person.
	Message string `json:"message,omitempty"`
	// Size and SHA256 describe the object fetched.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Revision is the revision the restored data is checked at and etcd starts at: the
	// restored data's current revision (the snapshot's newest, raised by the restore when
	// BackupRevision is set).
	Revision int64 `json:"revision,omitempty"`
	// BackupRevision is the snapshot's own newest revision when the restore raised the revision
	// above it (--bump-revision); 0 when it did not, then Revision is the backup's.
	BackupRevision int64 `json:"backupRevision,omitempty"`
	// TotalKeys was etcdutl's key count of the snapshot's backend (every revision's keys),
	// from `etcdutl snapshot status`, which agents no longer run (a whole extra pass over the
	// data); kept so that results of earlier agents still parse.
	TotalKeys int64 `json:"totalKeys,omitempty"`
	// HashKV is the keyspace hash of the restored data at Revision (internal/kvhash), what
	// etcd's HashKV serves there once a member runs on it.
	HashKV uint32 `json:"hashKV,omitempty"`
	// Keys is how many keys exist at Revision in the restored data.
	Keys int64 `json:"keys,omitempty"`
	// PointInTime is what a point-in-time restore replayed onto the backup before restoring it
	// (nil for a restore of the backup as it is).
	PointInTime *Replayed `json:"pointInTime,omitempty"`
	// CompactRevision is the restored data's compaction revision (-1: never compacted).
	CompactRevision int64 `json:"compactRevision,omitempty"`
	// Seconds is how long the step took.
	Seconds float64 `json:"seconds,omitempty"`
}

// SnapshotRevision is the backup snapshot's own newest revision: BackupRevision when the
// restore raised the revision, Revision otherwise.
func (r *Result) SnapshotRevision() int64 {
	if r.BackupRevision > 0 {
		return r.BackupRevision
	}
	return r.Revision
}

// ParseResult reads a Result from a termination message.
func ParseResult(msg string) (*Result, error) {
	r := &Result{}
	if err := json.Unmarshal([]byte(msg), r); err != nil {
		return nil, fmt.Errorf("reading the seed's result %q: %w", truncate(msg, 200), err)
	}
	if r.Outcome == "" {
		return nil, fmt.Errorf("seed result %q has no outcome", truncate(msg, 200))
	}
	return r, nil
}

// encode renders r within the kubelet's 4096-byte termination message limit, halving Message
// until it fits (and dropping it once it is too short to halve: the "..." of a cut would make
// it grow again, which looped forever when the other fields alone were too long).
func (r *Result) encode() []byte {
	out, _ := json.Marshal(r)
	for len(out) > 4000 && len(r.Message) > 0 {
		if len(r.Message) <= 16 {
			r.Message = ""
		} else {
			r.Message = truncate(r.Message, len(r.Message)/2)
		}
		out, _ = json.Marshal(r)
	}
	return out
}

// truncate cuts s to at most n bytes plus "...", at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
