package capture

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// etcd's storage layout (server/storage/schema and server/storage/mvcc, etcd 3.5 and 3.6),
// which a replay writes the way etcd's own store does. internal/kvhash reads the same layout.
var (
	keyBucket   = []byte("key")
	leaseBucket = []byte("lease")
	metaBucket  = []byte("meta")
	// compactKeys are the meta keys of the finished and the scheduled compaction revision.
	compactKeys = [][]byte{[]byte("finishedCompactRev"), []byte("scheduledCompactRev")}
)

const (
	// revKeyLen is a key bucket entry's key: 8 bytes main revision, '_', 8 bytes sub
	// revision; a tombstone (a deletion) appends 't'.
	revKeyLen = 17
	tombstone = 't'
	// etcd fills the key bucket sequentially (UnsafeSeqPut) with this fill percent.
	seqFillPercent = 0.9
	// commitBytes is how much a replay writes before it commits bbolt's transaction: a write
	// transaction keeps its dirty pages in memory.
	commitBytes = 32 << 20
)

// ErrInconsistent is wrapped when a captured change does not apply to the data: the capture
// is not this data's continuation.
var ErrInconsistent = errors.New("capture: the capture does not continue this data")

// keyState is what the replay knows of a key's latest revision: what etcd's key index holds.
type keyState struct {
	create, version int64
}

// dataFile is an etcd data file (member/snap/db, or a snapshot without its trailer) open for a
// replay: its key index, current revision and leases.
type dataFile struct {
	db *bolt.DB
	// index is every live key's create revision and version.
	index map[string]keyState
	// revision is the data's current revision.
	revision int64
	// leases are the lease IDs the data holds, with those the replay granted.
	leases map[int64]bool
	// tx is the open write transaction and written what it holds.
	tx      *bolt.Tx
	written int
}

// openData opens the etcd data file at path and reads its key index (one pass over the key
// bucket, holding each live key, not its value), its current revision (as etcd computes it at
// start) and its lease IDs.
func openData(path string) (*dataFile, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("opening etcd data %s: %w", path, err)
	}
	d := &dataFile{db: db, index: map[string]keyState{}, revision: 1, leases: map[int64]bool{}}
	err = db.View(func(tx *bolt.Tx) error {
		keys := tx.Bucket(keyBucket)
		if keys == nil {
			return errors.New("no key bucket: not an etcd data file")
		}
		err := keys.ForEach(func(k, v []byte) error {
			main, tomb, err := parseRevKey(k)
			if err != nil {
				return err
			}
			d.revision = max(d.revision, main)
			if len(v) == 0 {
				return nil // the revision etcdutl's --bump-revision marks: no key
			}
			kv, err := keyHeader(v)
			if err != nil {
				return fmt.Errorf("revision %d: %w", main, err)
			}
			if tomb {
				delete(d.index, string(kv.Key))
			} else {
				d.index[string(kv.Key)] = keyState{create: kv.CreateRevision, version: kv.Version}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if meta := tx.Bucket(metaBucket); meta != nil {
			for _, k := range compactKeys {
				if v := meta.Get(k); v != nil {
					main, _, err := parseRevKey(v)
					if err != nil {
						return fmt.Errorf("meta %s: %w", k, err)
					}
					d.revision = max(d.revision, main)
				}
			}
		}
		if leases := tx.Bucket(leaseBucket); leases != nil {
			return leases.ForEach(func(k, _ []byte) error {
				if len(k) != 8 {
					return fmt.Errorf("lease bucket entry %x is not a lease ID", k)
				}
				d.leases[int64(binary.BigEndian.Uint64(k))] = true //nolint:gosec // etcd stores int64 lease IDs this way
				return nil
			})
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("reading etcd data %s: %w", path, err)
	}
	return d, nil
}

// apply writes the record of the revision after the data's current one, as etcd's store wrote
// it: one key bucket entry per event, sub revisions in event order. Each event is checked
// against the key index first (a put's create revision and version, a deletion of a live
// key): a capture of other data fails before anything of the record is written. Keys attached
// to a lease the data does not hold get that lease back, with ttl seconds.
func (d *dataFile) apply(rec Record, ttl int64) (leases int, err error) {
	if rec.Revision != d.revision+1 {
		return 0, fmt.Errorf("%w: revision %d follows data at revision %d", ErrInconsistent, rec.Revision, d.revision)
	}
	for i, ev := range rec.Events {
		if err := d.check(ev); err != nil {
			return 0, fmt.Errorf("%w: revision %d, event %d: %w", ErrInconsistent, rec.Revision, i, err)
		}
	}
	if d.tx == nil {
		if d.tx, err = d.db.Begin(true); err != nil {
			return 0, fmt.Errorf("starting a write transaction: %w", err)
		}
	}
	keys := d.tx.Bucket(keyBucket)
	keys.FillPercent = seqFillPercent
	for sub, ev := range rec.Events {
		k := revKey(rec.Revision, int64(sub), ev.Type == mvccpb.DELETE)
		var v []byte
		if ev.Type == mvccpb.DELETE {
			v, err = (&mvccpb.KeyValue{Key: ev.Kv.Key}).Marshal()
			delete(d.index, string(ev.Kv.Key))
		} else {
			v, err = ev.Kv.Marshal()
			d.index[string(ev.Kv.Key)] = keyState{create: ev.Kv.CreateRevision, version: ev.Kv.Version}
			if id := ev.Kv.Lease; id != 0 && !d.leases[id] {
				if err := d.putLease(id, ttl); err != nil {
					return leases, err
				}
				leases++
			}
		}
		if err != nil {
			return leases, fmt.Errorf("encoding revision %d, event %d: %w", rec.Revision, sub, err)
		}
		if err := keys.Put(k, v); err != nil {
			return leases, fmt.Errorf("writing revision %d, event %d: %w", rec.Revision, sub, err)
		}
		d.written += len(k) + len(v)
	}
	d.revision = rec.Revision
	if d.written >= commitBytes {
		return leases, d.commit()
	}
	return leases, nil
}

// check fails unless ev applies to the key index: a put of a new key at its create revision
// with version 1, or of a live key with its create revision and the next version; a deletion
// of a live key.
func (d *dataFile) check(ev *mvccpb.Event) error {
	st, live := d.index[string(ev.Kv.Key)]
	switch {
	case ev.Type == mvccpb.DELETE && !live:
		return fmt.Errorf("deletes key %q, which the data does not hold", ev.Kv.Key)
	case ev.Type == mvccpb.DELETE:
		return nil
	case !live && (ev.Kv.CreateRevision != ev.Kv.ModRevision || ev.Kv.Version != 1):
		return fmt.Errorf("puts key %q, which the data does not hold, as version %d created at %d", ev.Kv.Key, ev.Kv.Version, ev.Kv.CreateRevision)
	case live && (ev.Kv.CreateRevision != st.create || ev.Kv.Version != st.version+1):
		return fmt.Errorf("puts key %q as version %d created at %d; the data holds version %d created at %d",
			ev.Kv.Key, ev.Kv.Version, ev.Kv.CreateRevision, st.version, st.create)
	}
	return nil
}

// putLease writes lease id with ttl seconds, as etcd's lessor persists a grant (leasepb.Lease:
// ID, TTL).
func (d *dataFile) putLease(id, ttl int64) error {
	b, err := d.tx.CreateBucketIfNotExists(leaseBucket)
	if err != nil {
		return fmt.Errorf("lease bucket: %w", err)
	}
	var v []byte
	v = protowire.AppendTag(v, 1, protowire.VarintType)
	v = protowire.AppendVarint(v, uint64(id)) //nolint:gosec // protobuf's int64 encoding
	v = protowire.AppendTag(v, 2, protowire.VarintType)
	v = protowire.AppendVarint(v, uint64(ttl))            //nolint:gosec // a positive TTL
	key := binary.BigEndian.AppendUint64(nil, uint64(id)) //nolint:gosec // etcd's lease key: the ID's bits
	if err := b.Put(key, v); err != nil {
		return fmt.Errorf("writing lease %x: %w", id, err)
	}
	d.leases[id] = true
	return nil
}

// commit commits the open write transaction, if any.
func (d *dataFile) commit() error {
	if d.tx == nil {
		return nil
	}
	tx := d.tx
	d.tx, d.written = nil, 0
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing replayed revisions: %w", err)
	}
	return nil
}

// close commits what is written, syncs the file and closes it; after a failed replay (abort)
// it rolls the open transaction back instead, which leaves the file with the revisions
// committed before it (every commitBytes; the caller discards the file).
func (d *dataFile) close(abort bool) error {
	var err error
	if abort && d.tx != nil {
		err = d.tx.Rollback()
		d.tx = nil
	}
	if err == nil {
		err = d.commit()
	}
	if err == nil {
		err = d.db.Sync()
	}
	if err != nil {
		if d.tx != nil {
			_ = d.tx.Rollback()
		}
		d.db.Close()
		return err
	}
	return d.db.Close()
}

// revKey is the key bucket key of revision main.sub.
func revKey(main, sub int64, tomb bool) []byte {
	k := make([]byte, revKeyLen, revKeyLen+1)
	binary.BigEndian.PutUint64(k, uint64(main)) //nolint:gosec // etcd stores int64 revisions this way
	k[8] = '_'
	binary.BigEndian.PutUint64(k[9:], uint64(sub)) //nolint:gosec // as above
	if tomb {
		k = append(k, tombstone)
	}
	return k
}

// parseRevKey reads the main revision of a key bucket key.
func parseRevKey(k []byte) (main int64, tomb bool, err error) {
	if (len(k) != revKeyLen && len(k) != revKeyLen+1) || k[8] != '_' {
		return 0, false, fmt.Errorf("key bucket entry %x is not a revision", k)
	}
	return int64(binary.BigEndian.Uint64(k)), len(k) == revKeyLen+1 && k[revKeyLen] == tombstone, nil //nolint:gosec // as revKey
}

// keyHeader decodes an mvccpb.KeyValue's key, create revision and version, skipping its value
// (values can be large and only these are needed).
func keyHeader(b []byte) (mvccpb.KeyValue, error) {
	var kv mvccpb.KeyValue
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return kv, fmt.Errorf("decoding a key-value: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			key, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return kv, fmt.Errorf("decoding a key: %w", protowire.ParseError(n))
			}
			kv.Key = key
			b = b[n:]
			continue
		case (num == 2 || num == 4) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return kv, fmt.Errorf("decoding a key-value: %w", protowire.ParseError(n))
			}
			if num == 2 {
				kv.CreateRevision = int64(v) //nolint:gosec // protobuf's int64 encoding
			} else {
				kv.Version = int64(v) //nolint:gosec // as above
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return kv, fmt.Errorf("decoding a key-value: %w", protowire.ParseError(n))
		}
		b = b[n:]
	}
	if kv.Key == nil {
		return kv, errors.New("a key-value without a key")
	}
	return kv, nil
}
