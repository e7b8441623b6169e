package kubectletcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// snapshotCmd dispatches `kubectl etcd snapshot <subcommand>`.
func (a *App) snapshotCmd(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "download" {
		return a.usageError("snapshot: want `snapshot download <backup | location> -o <file>`")
	}
	return a.download(ctx, args[1:])
}

// download streams a backup object into a file while checking etcd's trailing sha256: `kubectl
// etcd snapshot download <backup | location> -o file`. The file appears only when the checksum
// matched.
func (a *App) download(ctx context.Context, args []string) error {
	fs := a.flagSet("snapshot download")
	out := fs.String("o", "", "the file to write (required)")
	schedule := fs.String("schedule", "", "for a location URL: the EtcdBackupSchedule whose storage block and Secret reach it")
	backupName := fs.String("backup", "", "for a location URL: the EtcdBackup whose storage block and Secret reach it")
	ambient := fs.Bool("ambient-credentials", false, "for a storage block without a credentials Secret, use this machine's cloud credentials")
	pos, err := a.parse(fs, args, 1, "snapshot download <backup | location URL> -o <file>")
	if err != nil {
		return err
	}
	if *out == "" {
		return a.usageError("snapshot download: -o <file> is required")
	}
	c, ns, err := a.kube.client()
	if err != nil {
		return err
	}
	spec, url, from, err := downloadSource(ctx, c, ns, pos[0], *schedule, *backupName)
	if err != nil {
		return err
	}
	loc, err := storage.FromSpec(spec)
	if err != nil {
		return fmt.Errorf("storage of %s: %w", from, err)
	}
	if loc, err = loc.At(url); err != nil {
		return fmt.Errorf("location %s with the storage of %s: %w", url, from, err)
	}
	policy := storage.AmbientPolicy{}
	if *ambient {
		policy = storage.TenantIdentity
	}
	store, stop, err := a.openStore(ctx, c, ns, loc, policy)
	if err != nil {
		return fmt.Errorf("opening the storage of %s: %w", from, err)
	}
	defer stop()
	defer func() { _ = store.Close() }()
	start := a.Now()
	v, err := fetchVerified(ctx, store, loc.Key, *out)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	fmt.Fprintf(a.Out, "%s -> %s: %s, etcd checksum verified, sha256 %s (%s)\n", url, *out, byteSize(v.Size()), v.SHA256(), a.Now().Sub(start).Round(time.Millisecond))
	return nil
}

// downloadSource resolves the argument: a location URL (with the storage of --schedule or
// --backup), or the name of an EtcdBackup (its status.location with its storage).
func downloadSource(ctx context.Context, c client.Reader, ns, arg, schedule, backupName string) (*etcdv1beta2.BackupSpec, string, string, error) {
	if _, _, _, ok := storage.ParseURL(arg); ok {
		switch {
		case schedule != "":
			s := &etcdv1beta2.EtcdBackupSchedule{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedule}, s); err != nil {
				return nil, "", "", fmt.Errorf("getting EtcdBackupSchedule %s/%s: %w", ns, schedule, err)
			}
			return &s.Spec.BackupTemplate.Spec, arg, "etcdbackupschedule/" + s.Name, nil
		case backupName != "":
			b, err := getBackup(ctx, c, ns, backupName)
			if err != nil {
				return nil, "", "", err
			}
			return &b.Spec, arg, "etcdbackup/" + b.Name, nil
		}
		return nil, "", "", errors.New("a location URL needs --schedule or --backup: whose storage block and credentials Secret reach it")
	}
	b, err := getBackup(ctx, c, ns, arg)
	if err != nil {
		return nil, "", "", err
	}
	if b.Status.Location == "" {
		return nil, "", "", fmt.Errorf("EtcdBackup %s/%s has no status.location (phase %q)", ns, arg, b.Status.Phase)
	}
	return &b.Spec, b.Status.Location, "etcdbackup/" + b.Name, nil
}

func getBackup(ctx context.Context, c client.Reader, ns, name string) (*etcdv1beta2.EtcdBackup, error) {
	b := &etcdv1beta2.EtcdBackup{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		return nil, fmt.Errorf("getting EtcdBackup %s/%s: %w", ns, name, err)
	}
	return b, nil
}

// fetchVerified copies the object key through a VerifyingReader into a temporary file next to
// path and renames it to path once etcd's checksum matched; on any error no file is left.
func fetchVerified(ctx context.Context, store *storage.Store, key, path string) (*snapshot.VerifyingReader, error) {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return nil, fmt.Errorf("creating a file next to %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op after the rename
	v := snapshot.NewVerifyingReader(rc)
	if _, err := io.Copy(tmp, v); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("moving the download to %s: %w", path, err)
	}
	return v, nil
}
