package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
)

// Secrets reads the data of a Secret a Location names. A missing one is a SecretNotFound
// failure.
type Secrets interface {
	Data(ctx context.Context, name string) (map[string][]byte, error)
}

// APISecrets reads Secrets of Namespace from the API server: what the operators use.
type APISecrets struct {
	Reader    client.Reader
	Namespace string
}

// Data implements Secrets.
func (s APISecrets) Data(ctx context.Context, name string) (map[string][]byte, error) {
	return kubesecret.Data(ctx, s.Reader, s.Namespace, name)
}

// DirSecrets reads Secrets mounted as volumes at Root/<name> (see PodSecrets): what the seed
// agent uses, so the credentials never pass through a flag or an environment variable.
type DirSecrets struct{ Root string }

// Data implements Secrets.
func (s DirSecrets) Data(_ context.Context, name string) (map[string][]byte, error) {
	dir := filepath.Join(s.Root, name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s is not mounted at %s", name, dir)
		}
		return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "reading secret %s at %s: %w", name, dir, err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		// A mounted Secret holds its keys as symlinks to ..data/<key>; skip the ..* entries.
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, syscall.EISDIR) {
			continue
		}
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "reading secret %s key %s: %w", name, e.Name(), err)
		}
		data[e.Name()] = b
	}
	if len(data) == 0 {
		// PodSecrets mounts Secrets as optional: one that does not exist is an empty directory.
		return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s does not exist or is empty (mounted at %s)", name, dir)
	}
	return data, nil
}

// Config is the provider configuration of l: its credentials Secret's data (none: ambient
// credentials) and its CA bundle. A CA Secret without the key is an InvalidSpec failure.
func (l Location) Config(ctx context.Context, secrets Secrets) (factory.Config, error) {
	cfg := factory.Config{
		Type:           factory.Type(l.Type),
		Bucket:         l.Bucket,
		Endpoint:       l.Endpoint,
		ForcePathStyle: l.ForcePathStyle,
	}
	if lock := l.ObjectLock; lock != nil && l.Type == etcdv1beta2.BackupStorageTypeS3 {
		cfg.ObjectLockMode, cfg.ObjectLockDays = string(lock.Mode), int(lock.RetainDays)
	}
	if l.Secret != "" {
		data, err := secrets.Data(ctx, l.Secret)
		if err != nil && l.Type == etcdv1beta2.BackupStorageTypePVC {
			// The backup operator makes the claim's server and its Secret once something names
			// the claim: until then, the storage is not reachable yet (a retry may find it).
			return factory.Config{}, &reason.Error{Reason: etcdv1beta2.ReasonStorageUnreachable, Transient: true,
				Err: fmt.Errorf("the volume server of claim %s is not running yet (the backup operator starts it while something names the claim, and the claim exists): %w", l.Bucket, err)}
		}
		if err != nil {
			return factory.Config{}, err
		}
		cfg.Secret = data
	}
	if l.CA != nil {
		data, err := secrets.Data(ctx, l.CA.Name)
		if err != nil {
			return factory.Config{}, err
		}
		if cfg.CABundle = data[l.CA.Key]; len(cfg.CABundle) == 0 {
			return factory.Config{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "endpointCA: secret %s has no key %q", l.CA.Name, l.CA.Key)
		}
	}
	return cfg, nil
}

// Store is an opened object store and the Location it was opened for. Its Backend encodes
// what it writes as the Location says (compression, encryption) and decodes whatever it
// reads (backend.WithEncoding).
type Store struct {
	backend.Backend
	Location
	// Format is how Put stores objects: plain, zstd, age or zstd+age.
	Format codec.Format
}

// URLOf is the status URL of key in the store.
func (s *Store) URLOf(key string) string { return s.WithKey(key).URL() }

// Open reaches the store of l with its credentials and CA bundle from secrets; without a
// credentials Secret, only where ambient allows the ambient identity. It makes no network
// request. Errors carry a reason: AmbientCredentialsDenied, SecretNotFound, InvalidSpec, or
// InvalidCredentials for credentials or a CA bundle the provider cannot use.
func Open(ctx context.Context, l Location, secrets Secrets, ambient AmbientPolicy) (*Store, error) {
	if err := ambient.Check(l); err != nil {
		return nil, err
	}
	cfg, err := l.Config(ctx, secrets)
	if err != nil {
		return nil, err
	}
	enc, err := l.encoding(ctx, secrets)
	if err != nil {
		return nil, err
	}
	b, err := factory.New(ctx, cfg)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonInvalidCredentials, "configuring %s storage with secret %q: %w", l.Type, l.Secret, err)
	}
	return &Store{Backend: backend.WithEncoding(b, enc), Location: l, Format: enc.Write.Format()}, nil
}

// encoding is how objects of l are written (compressed when l.Compress, encrypted to the
// recipients of l.Encryption's Secret) and the identities they are read with. A Secret with
// neither key, or with a key that does not parse, is an EncryptionKeyInvalid failure.
func (l Location) encoding(ctx context.Context, secrets Secrets) (backend.Encoding, error) {
	enc := backend.Encoding{Write: codec.Options{Compress: l.Compress}}
	if l.Encryption == "" {
		return enc, nil
	}
	data, err := secrets.Data(ctx, l.Encryption)
	if err != nil {
		return enc, err
	}
	invalid := func(err error) error {
		return reason.Errorf(etcdv1beta2.ReasonEncryptionKeyInvalid, "encryption secret %s: %w", l.Encryption, err)
	}
	idData, rcData := data[etcdv1beta2.EncryptionIdentityKey], data[etcdv1beta2.EncryptionRecipientsKey]
	if len(idData) == 0 && len(rcData) == 0 {
		return enc, invalid(fmt.Errorf("has neither %q (age identities, as age-keygen writes them) nor %q (age1... public keys)",
			etcdv1beta2.EncryptionIdentityKey, etcdv1beta2.EncryptionRecipientsKey))
	}
	if len(idData) > 0 {
		if enc.Identities, err = codec.ParseIdentities(idData); err != nil {
			return enc, invalid(fmt.Errorf("key %q: %w", etcdv1beta2.EncryptionIdentityKey, err))
		}
	}
	if len(rcData) > 0 {
		enc.Write.Recipients, err = codec.ParseRecipients(rcData)
	} else {
		enc.Write.Recipients, err = codec.RecipientsOf(enc.Identities)
	}
	if err != nil {
		return enc, invalid(err)
	}
	return enc, nil
}

// DecodeReason is the reason of an error reading an object through a Store that comes from
// its encoding: DecryptionFailed for an encrypted object no identity opens (or read without
// encryption configured), BackupCorrupt for one whose encryption or compression is damaged or
// cut short; "" for any other error.
func DecodeReason(err error) string {
	switch {
	case errors.Is(err, codec.ErrWrongKey), errors.Is(err, codec.ErrNoKey):
		return etcdv1beta2.ReasonDecryptionFailed
	case errors.Is(err, codec.ErrCorrupt):
		return etcdv1beta2.ReasonBackupCorrupt
	}
	return ""
}

// DecodeHint says what to do about an encrypted object that could not be read: "" for other
// errors.
func DecodeHint(err error) string {
	switch {
	case errors.Is(err, codec.ErrNoKey):
		return "; the object is encrypted with age: name the Secret with its identity in the storage block's encryption.secretName"
	case errors.Is(err, codec.ErrWrongKey):
		return "; the identities in the encryption Secret's \"identity\" key are not among the object's recipients: name the Secret with the key it was encrypted to"
	}
	return ""
}
