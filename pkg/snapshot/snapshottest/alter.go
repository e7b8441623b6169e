package snapshottest

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// AlterNewestValue changes, in the bbolt file db of a stopped etcd member, the value of the
// newest key revision its file holds, and leaves the file valid: the member starts and
// serves, but its data differs from its peers' (what a bad disk or a bug leaves behind; only a
// comparison of hashes finds it). Replaying the member's WAL on start does not undo it: that
// writes newer revisions only.
func AlterNewestValue(t testing.TB, db string) {
	t.Helper()
	// A member just killed may hold its lock a moment longer: Open waits for it.
	bdb, err := bolt.Open(db, 0o600, &bolt.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return errors.New("no key bucket")
		}
		k, v := b.Cursor().Last()
		if k == nil {
			return errors.New("no key revision committed to the file yet")
		}
		var kv mvccpb.KeyValue
		if err := kv.Unmarshal(v); err != nil {
			return err
		}
		kv.Value = append(kv.Value, []byte("-altered")...)
		out, err := kv.Marshal()
		if err != nil {
			return err
		}
		return b.Put(append([]byte(nil), k...), out)
	})
	if err != nil {
		t.Fatalf("altering %s: %v", db, err)
	}
}
