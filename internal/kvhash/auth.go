package kvhash

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/authpb"
)

// etcd's auth buckets and keys (server/storage/schema/auth.go).
var (
	authBucket      = []byte("auth")
	authUsersBucket = []byte("authUsers")
	authEnabledKey  = []byte("authEnabled")
)

// AuthStore is what a data file's auth store holds, as far as a restore needs to know it.
type AuthStore struct {
	// Enabled is whether etcd starts on this data with authentication on.
	Enabled bool
	// Users are the users by name.
	Users map[string]*authpb.User
}

// Auth reads the auth store of the bbolt data file at path, read-only.
func Auth(path string) (*AuthStore, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st := &AuthStore{Users: map[string]*authpb.User{}}
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(authBucket); b != nil {
			v := b.Get(authEnabledKey)
			st.Enabled = len(v) == 1 && v[0] == 1
		}
		b := tx.Bucket(authUsersBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			u := &authpb.User{}
			if err := u.Unmarshal(v); err != nil {
				return fmt.Errorf("user %q: %w", k, err)
			}
			st.Users[string(k)] = u
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the auth store of %s: %w", path, err)
	}
	return st, nil
}
