// Package kvhash computes, from an etcd data file (member/snap/db) at rest, the keyspace hash and
// key count that a running etcd serves for the same revision (HashKV and a counting Range), so
// a restore can be verified before any member starts, and its result compared with what the
// members serve afterwards.
//
// etcd's own offline tool cannot do this for every keyspace: `etcdutl hashkv` (3.6) builds
// etcd's MVCC store without a lessor, and that store panics ("no lessor to attach lease") on
// the first key attached to a lease, which is most real keyspaces (Kubernetes events and
// endpoint leases, locks, elections, service registries); etcdutl 3.5 has no hashkv at all.
// This package reads the bbolt file read-only and follows etcd's algorithm
// (server/storage/mvcc/hash.go and the key index's Keep, etcd 3.5.16 and later, 3.6), which
// never needs a lease: leases do not take part in the keyspace hash.
package kvhash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
)

// etcd's bucket and key names (server/storage/schema).
var (
	keyBucket          = []byte("key")
	metaBucket         = []byte("meta")
	finishedCompactKey = []byte("finishedCompactRev")
	scheduledCompactKy = []byte("scheduledCompactRev")
)

// Revision key layout in the key bucket (server/storage/mvcc/revision.go): 8 bytes main
// revision, '_', 8 bytes sub revision, and a trailing 't' for a tombstone (a delete).
const (
	revBytesLen       = 8 + 1 + 8
	markedRevBytesLen = revBytesLen + 1
	markTombstone     = 't'
)

// ErrCompacted is returned for a revision below the data's compaction revision, as etcd does.
var ErrCompacted = errors.New("kvhash: the revision is compacted")

// ErrFutureRev is returned for a revision above the data's current revision, as etcd does.
var ErrFutureRev = errors.New("kvhash: the revision is newer than the data")

// Result is the keyspace of a data file at one revision, as a running etcd on it serves it.
type Result struct {
	// Hash is etcd's HashKV at Revision.
	Hash uint32
	// Revision is the revision hashed; the data's current revision when 0 was asked for.
	Revision int64
	// CurrentRevision is the revision etcd starts at on this data.
	CurrentRevision int64
	// CompactRevision is the compaction revision etcd starts with on this data (a compaction
	// that was scheduled but not finished when the snapshot was taken is resumed at start, so
	// it counts); -1 for data never compacted, as etcd says.
	CompactRevision int64
	// Keys is how many keys exist at Revision (a Range over the whole keyspace with CountOnly).
	Keys int64
}

type revision struct{ main, sub int64 }

func parseRev(b []byte) (revision, bool, error) {
	if len(b) != revBytesLen && len(b) != markedRevBytesLen {
		return revision{}, false, fmt.Errorf("key bucket entry %q is not a revision", b)
	}
	rev := revision{main: int64(binary.BigEndian.Uint64(b[0:8])), sub: int64(binary.BigEndian.Uint64(b[9:17]))} //nolint:gosec // etcd stores int64 revisions this way
	return rev, len(b) == markedRevBytesLen && b[revBytesLen] == markTombstone, nil
}

// Options bound the work.
type Options struct {
	// Deadline stops a hash of a very large file; zero means none.
	Deadline time.Time
}

// File computes the Result of the bbolt data file at path for rev (0: its current revision).
// The file is opened read-only and never changed.
func File(path string, rev int64, opts Options) (*Result, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var res *Result
	err = db.View(func(tx *bolt.Tx) error {
		var err error
		res, err = hashTx(tx, rev, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	return res, nil
}

func hashTx(tx *bolt.Tx, rev int64, opts Options) (*Result, error) {
	keys := tx.Bucket(keyBucket)
	if keys == nil {
		return nil, errors.New("no key bucket: not an etcd data file")
	}
	res := &Result{CompactRevision: -1} // etcd's value for data never compacted
	scheduled := int64(0)
	if meta := tx.Bucket(metaBucket); meta != nil {
		if v := meta.Get(finishedCompactKey); v != nil {
			r, _, err := parseRev(v)
			if err != nil {
				return nil, fmt.Errorf("meta %s: %w", finishedCompactKey, err)
			}
			res.CompactRevision = r.main
		}
		if v := meta.Get(scheduledCompactKy); v != nil {
			r, _, err := parseRev(v)
			if err != nil {
				return nil, fmt.Errorf("meta %s: %w", scheduledCompactKy, err)
			}
			scheduled = r.main
		}
	}

	// Pass 1: the latest revision of every key at rev (etcd's key index), and the current
	// revision as etcd's store restore computes it.
	current := int64(1)
	if last, _ := keys.Cursor().Last(); last != nil {
		r, _, err := parseRev(last)
		if err != nil {
			return nil, err
		}
		current = r.main
	}
	current = max(current, res.CompactRevision, scheduled)
	if scheduled > 0 && scheduled > res.CompactRevision {
		res.CompactRevision = scheduled // etcd resumes the compaction when it starts
	}
	res.CurrentRevision = current
	switch {
	case rev > 0 && rev < res.CompactRevision:
		return nil, fmt.Errorf("revision %d, compacted at %d: %w", rev, res.CompactRevision, ErrCompacted)
	case rev > current:
		return nil, fmt.Errorf("revision %d, current %d: %w", rev, current, ErrFutureRev)
	case rev <= 0:
		rev = current
	}
	res.Revision = rev

	type latest struct {
		rev       revision
		tombstone bool
	}
	index := map[string]*latest{}
	n := 0
	err := keys.ForEach(func(k, v []byte) error {
		r, tomb, err := parseRev(k)
		if err != nil {
			return err
		}
		if r.main > rev {
			return errStop
		}
		if n++; n%4096 == 0 && !opts.Deadline.IsZero() && time.Now().After(opts.Deadline) {
			return fmt.Errorf("deadline reached after %d revisions", n)
		}
		var key []byte
		// etcdutl snapshot restore --bump-revision marks the raised revision with an empty
		// value, which etcd reads as a key-value with the empty key: an entry of its key index
		// like any other (so it is kept by a compaction), though no Range ever returns it.
		if len(v) > 0 {
			if key, err = userKey(v); err != nil {
				return fmt.Errorf("revision %d.%d: %w", r.main, r.sub, err)
			}
		}
		// Entries come in revision order, so the last one seen is the latest.
		if l, ok := index[string(key)]; ok {
			l.rev, l.tombstone = r, tomb
		} else {
			index[string(key)] = &latest{rev: r, tombstone: tomb}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	// keep is etcd's kvindex.Keep(rev): every key's latest revision at rev, unless that
	// revision deletes it. Only revisions at or below the compaction revision are checked
	// against it.
	keep := map[revision]struct{}{}
	for k, l := range index {
		if l.tombstone {
			continue
		}
		if k != "" {
			res.Keys++
		}
		if l.rev.main <= res.CompactRevision {
			keep[l.rev] = struct{}{}
		}
	}
	anyKept := len(keep) > 0 || res.Keys > 0 // etcd skips nothing when Keep is empty
	index = nil

	// Pass 2: etcd's kvHasher over the key bucket in order.
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(keyBucket)
	err = keys.ForEach(func(k, v []byte) error {
		r, tomb, err := parseRev(k)
		if err != nil {
			return err
		}
		if r.main > rev {
			return errStop
		}
		if r.main <= res.CompactRevision && anyKept {
			if _, ok := keep[r]; !ok {
				return nil
			}
		}
		// etcd before 3.5.16 deleted a tombstone at the compaction revision and later
		// versions keep it: etcd skips it so that both hash alike.
		if r.main == res.CompactRevision && tomb {
			return nil
		}
		h.Write(k)
		h.Write(v)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	res.Hash = h.Sum32()
	return res, nil
}

var errStop = errors.New("past the revision")

// userKey reads the key (field 1, its last occurrence) of an mvccpb.KeyValue without decoding, or copying, the rest:
// the value can be large, and only the key is needed.
func userKey(b []byte) ([]byte, error) {
	var key []byte
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("decoding a key-value: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			// A field that appears twice takes its last value, as protobuf (and etcd's
			// decoder) reads it: the whole record is read.
			k, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, fmt.Errorf("decoding a key: %w", protowire.ParseError(n))
			}
			key, found = k, true
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, fmt.Errorf("decoding a key-value: %w", protowire.ParseError(n))
		}
		b = b[n:]
	}
	if !found {
		return nil, errors.New("a key-value without a key")
	}
	return key, nil
}

// openReadOnly opens the etcd data file at path read-only: it is never changed.
func openReadOnly(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening etcd data file %s: %w", path, err)
	}
	return db, nil
}
