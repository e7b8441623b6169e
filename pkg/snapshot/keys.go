package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KeyTimeFormat is the UTC timestamp in backup object keys: fixed width, so keys under one
// prefix sort by time.
const KeyTimeFormat = "20060102T150405Z"

// revisionDigits is the zero-padded width of the revision in keys: enough for any int64.
const revisionDigits = 20

// ObjectKey returns the key of a periodic or scheduled backup taken at t of a store at revision
// rev: <prefix>_<UTC timestamp>_v<revision padded to 20 digits>, for example
// etcd.backup_20260101T020000Z_v00000000000000012345. Keys under one prefix sort by time in
// string order and carry the revision; retention parses them with ParseKey instead of relying
// on string order.
func ObjectKey(prefix string, rev int64, t time.Time) string {
	return fmt.Sprintf("%s_%s_v%0*d", prefix, t.UTC().Format(KeyTimeFormat), revisionDigits, rev)
}

// KeyInfo is what a backup object key says about the backup.
type KeyInfo struct {
	// Time is when the backup was taken (second precision, UTC).
	Time time.Time
	// Revision is the etcd store revision the member reported before the snapshot.
	Revision int64
}

// ParseKey parses a key written by ObjectKey under prefix. ok is false for any key this project
// did not write that way under exactly this prefix (other prefixes that share the beginning,
// one-shot backups, foreign objects), which retention then leaves alone.
func ParseKey(prefix, key string) (KeyInfo, bool) {
	rest, ok := strings.CutPrefix(key, prefix+"_")
	if !ok {
		return KeyInfo{}, false
	}
	ts, rev, ok := strings.Cut(rest, "_v")
	if !ok || len(ts) != len(KeyTimeFormat) || len(rev) != revisionDigits {
		return KeyInfo{}, false
	}
	t, err := time.Parse(KeyTimeFormat, ts)
	if err != nil {
		return KeyInfo{}, false
	}
	for _, c := range rev {
		if c < '0' || c > '9' {
			return KeyInfo{}, false
		}
	}
	r, err := strconv.ParseInt(rev, 10, 64)
	if err != nil {
		return KeyInfo{}, false
	}
	return KeyInfo{Time: t, Revision: r}, true
}
