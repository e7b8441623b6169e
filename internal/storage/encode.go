package storage

import (
	"encoding/json"
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Encode writes l as one string, for an annotation or the seed agent's --location flag. Decode
// reads it back.
func (l Location) Encode() string {
	raw, err := json.Marshal(l)
	if err != nil { // a struct of strings and a bool always marshals
		panic(fmt.Sprintf("encoding a storage location: %v", err))
	}
	return string(raw)
}

// Decode reads a Location written by Encode. It also reads the storage block JSON (a
// BackupSpec) that restores started by the previous release pinned in their annotation, so a
// restore in flight survives an operator upgrade.
func Decode(s string) (Location, error) {
	var l Location
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return Location{}, fmt.Errorf("decoding storage location: %w", err)
	}
	if l.Type == "" {
		var legacy etcdv1beta2.BackupSpec
		if err := json.Unmarshal([]byte(s), &legacy); err == nil && legacy.StorageType != "" {
			// Checked below like any other: a pinned spec with an empty CA Secret name would
			// otherwise pass (found by FuzzDecode).
			if l, err = FromSpec(&legacy); err != nil {
				return Location{}, err
			}
		}
	}
	switch {
	case !knownType(l.Type):
		return Location{}, fmt.Errorf("decoding storage location: unknown storage type %q", l.Type)
	case l.Bucket == "" || l.Key == "":
		return Location{}, fmt.Errorf("decoding storage location: bucket and key are required")
	case l.CA != nil && (l.CA.Name == "" || l.CA.Key == ""):
		return Location{}, fmt.Errorf("decoding storage location: the CA reference needs a Secret name and key")
	}
	return l, nil
}

// knownType reports whether t is a storage type of the API.
func knownType(t etcdv1beta2.BackupStorageType) bool {
	switch t {
	case etcdv1beta2.BackupStorageTypeS3, etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS, etcdv1beta2.BackupStorageTypePVC:
		return true
	}
	return false
}
