// Package storage is where a backup lives and how to reach it. A Location is built from any
// form the API has (an EtcdBackup's or schedule template's storage block, an EtcdRestore's coreos
// block, a location recorded in a status) by one switch, FromSource; it is written into a status
// as a URL, handed to the restore seed agent by Encode and read back by Decode; Open turns it into
// a backend.Backend with its credentials and CA bundle. The backup operator, the restore operator
// and the seed agent all use it, so the four forms a location takes cannot drift apart.
package storage

import (
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

// Location is one backup object (or a key prefix of backups) and how to reach it.
type Location struct {
	// Type is the object store: S3, ABS, GCS or OSS.
	Type etcdv1beta2.BackupStorageType `json:"type"`
	// Bucket is the S3, GCS or OSS bucket or the ABS container.
	Bucket string `json:"bucket"`
	// Key is the object key, or the key prefix of a periodic backup or schedule.
	Key string `json:"key"`
	// Endpoint is a custom store endpoint; empty: the provider's public one (for OSS, the
	// Hangzhou region's: factory.DefaultOSSEndpoint).
	Endpoint string `json:"endpoint,omitempty"`
	// ForcePathStyle selects path-style S3 addressing.
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// Secret names the credentials Secret (coreos format) in the object's namespace; empty: the
	// operator's ambient credentials.
	Secret string `json:"secret,omitempty"`
	// CA names a Secret key with PEM CA certificates trusted for the endpoint.
	CA *etcdv1beta2.SecretKeySelector `json:"ca,omitempty"`
	// Encryption names the Secret with the age keys (the storage block's encryption); empty:
	// objects are written plain and encrypted ones cannot be read.
	Encryption string `json:"encryption,omitempty"`
	// Compress compresses what is written with zstd (a backup spec's compression). Reading
	// needs no setting.
	Compress bool `json:"compress,omitempty"`
	// ObjectLock is the S3 Object Lock retention of what is written; nil: none.
	ObjectLock *etcdv1beta2.S3ObjectLock `json:"objectLock,omitempty"`
}

// FromSource is the one place a storage block of the API becomes a Location: the block that typ
// names (s3, abs, gcs or oss), its path split into bucket and key. A missing block or a malformed
// path is an InvalidSpec failure.
func FromSource(typ etcdv1beta2.BackupStorageType, src etcdv1beta2.BackupSource) (Location, error) {
	l := Location{Type: typ}
	var path string
	var ca *etcdv1beta2.SecretKeySelector
	switch typ {
	case etcdv1beta2.BackupStorageTypeS3:
		if src.S3 == nil {
			return Location{}, missingBlock(typ, "s3")
		}
		path, l.Secret, l.Endpoint, l.ForcePathStyle, ca = src.S3.Path, src.S3.AWSSecret, src.S3.Endpoint, src.S3.ForcePathStyle, src.S3.EndpointCA
		l.ObjectLock = src.S3.ObjectLock.DeepCopy()
	case etcdv1beta2.BackupStorageTypeABS:
		if src.ABS == nil {
			return Location{}, missingBlock(typ, "abs")
		}
		path, l.Secret, l.Endpoint, ca = src.ABS.Path, src.ABS.ABSSecret, src.ABS.Endpoint, src.ABS.EndpointCA
	case etcdv1beta2.BackupStorageTypeGCS:
		if src.GCS == nil {
			return Location{}, missingBlock(typ, "gcs")
		}
		path, l.Secret, l.Endpoint, ca = src.GCS.Path, src.GCS.GCPSecret, src.GCS.Endpoint, src.GCS.EndpointCA
	case etcdv1beta2.BackupStorageTypeOSS:
		if src.OSS == nil {
			return Location{}, missingBlock(typ, "oss")
		}
		path, l.Secret, l.Endpoint, ca = src.OSS.Path, src.OSS.OSSSecret, src.OSS.Endpoint, src.OSS.EndpointCA
	case etcdv1beta2.BackupStorageTypePVC:
		if src.PVC == nil {
			return Location{}, missingBlock(typ, "pvc")
		}
		// The claim is the bucket; its server's Secret (URL, token, pinned certificate) the
		// credentials, made by the backup operator, never named in a spec.
		path, l.Secret = src.PVC.ClaimName+"/"+src.PVC.Path, backupvolume.Name(src.PVC.ClaimName)
	default:
		return Location{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "unknown storage type %q, want S3, ABS, GCS, OSS or PVC", typ)
	}
	if ca != nil {
		l.CA = ca.DeepCopy()
		if l.CA.Key == "" {
			l.CA.Key = etcdv1beta2.DefaultCAKey
		}
	}
	if src.Encryption != nil {
		l.Encryption = src.Encryption.SecretName
	}
	var err error
	if l.Bucket, l.Key, err = factory.SplitPath(path); err != nil {
		return Location{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "storage %s: %w", typ, err)
	}
	return l, nil
}

// Block is the inverse of FromSource: the storage block of the API that names l, as
// EtcdCluster.spec.bootstrap.restore.source carries it.
func (l Location) Block() etcdv1beta2.BackupSource {
	path := l.Bucket + "/" + l.Key
	var ca *etcdv1beta2.SecretKeySelector
	if l.CA != nil {
		ca = l.CA.DeepCopy()
	}
	var src etcdv1beta2.BackupSource
	switch l.Type {
	case etcdv1beta2.BackupStorageTypeS3:
		src.S3 = &etcdv1beta2.S3Source{Path: path, AWSSecret: l.Secret, Endpoint: l.Endpoint, ForcePathStyle: l.ForcePathStyle, EndpointCA: ca, ObjectLock: l.ObjectLock.DeepCopy()}
	case etcdv1beta2.BackupStorageTypeABS:
		src.ABS = &etcdv1beta2.ABSSource{Path: path, ABSSecret: l.Secret, Endpoint: l.Endpoint, EndpointCA: ca}
	case etcdv1beta2.BackupStorageTypeGCS:
		src.GCS = &etcdv1beta2.GCSSource{Path: path, GCPSecret: l.Secret, Endpoint: l.Endpoint, EndpointCA: ca}
	case etcdv1beta2.BackupStorageTypeOSS:
		src.OSS = &etcdv1beta2.OSSSource{Path: path, OSSSecret: l.Secret, Endpoint: l.Endpoint, EndpointCA: ca}
	case etcdv1beta2.BackupStorageTypePVC:
		src.PVC = &etcdv1beta2.PVCSource{ClaimName: l.Bucket, Path: l.Key}
	default:
		return etcdv1beta2.BackupSource{}
	}
	if l.Encryption != "" {
		src.Encryption = &etcdv1beta2.BackupEncryption{SecretName: l.Encryption}
	}
	return src
}

// FromSpec is FromSource of a backup spec's storage type and block, with its compression.
func FromSpec(spec *etcdv1beta2.BackupSpec) (Location, error) {
	l, err := FromSource(spec.StorageType, spec.BackupSource)
	l.Compress = spec.Compression == etcdv1beta2.CompressionZstd
	return l, err
}

func missingBlock(typ etcdv1beta2.BackupStorageType, block string) error {
	return reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "storage type %s needs the %s block", typ, block)
}

// WithKey returns l naming key in the same bucket.
func (l Location) WithKey(key string) Location {
	l.Key = key
	return l
}

// URL is how a status records the object: <type>://<bucket>/<key>.
func (l Location) URL() string { return fmt.Sprintf("%s://%s/%s", l.Type, l.Bucket, l.Key) }

// ParseURL splits a URL written by Location.URL into storage type, bucket and key.
func ParseURL(url string) (typ etcdv1beta2.BackupStorageType, bucket, key string, ok bool) {
	t, rest, ok := strings.Cut(url, "://")
	if !ok {
		return "", "", "", false
	}
	bucket, key, ok = strings.Cut(rest, "/")
	return etcdv1beta2.BackupStorageType(t), bucket, key, ok && bucket != "" && key != ""
}

// At returns l naming the object a status recorded as url (same store, credentials and CA; the
// bucket and key of url). A url of another storage type or a malformed one is a BackupNotFound
// failure.
func (l Location) At(url string) (Location, error) {
	typ, bucket, key, ok := ParseURL(url)
	if !ok || typ != l.Type {
		return Location{}, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "backup location %q is not a %s object location", url, l.Type)
	}
	l.Bucket, l.Key = bucket, key
	return l, nil
}
