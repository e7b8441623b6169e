package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	clusterversion "github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// noChange ends the message of every preflight failure.
const noChange = "; no cluster was changed"

// preflight checks, before a restore deletes or creates any cluster, everything the members
// will need that can be read: the agent image, an etcd at least as new as the backup's, the
// credentials they mount, a source the etcd operator accepts, the storage class and the volume
// quota. c is the cluster the restore would create. What only admission can tell (Pod
// Security, pod quota, webhooks) an in-place restore learns from its check Job's pod, which
// runs the members' containers with their security context and resources (check.go); the
// restore operator writes no pod or volume, not even in a dry run.
func (r *Reconciler) preflight(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, names []string) error {
	if r.AgentImage == "" {
		return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the restore operator does not know the image of its seed agent: run it with --seed-agent-image, or with POD_NAME and POD_NAMESPACE set from the downward API"+noChange)
	}
	if err := r.checkVersion(ctx, rs, c.Spec.Version); err != nil {
		return err
	}
	src, err := pinned(rs)
	if err != nil {
		return err
	}
	if err := r.checkSecrets(ctx, rs, c, src); err != nil {
		return err
	}
	if _, err := restoreboot.FromSpec(c.Spec.Bootstrap.Restore.Source); err != nil {
		return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the etcd operator could not restore the members from this backup: %v"+noChange, err)
	}
	if err := r.checkStorageClass(ctx, c); err != nil {
		return err
	}
	return r.checkVolumeQuota(ctx, rs, c, names)
}

// checkVersion fails when the backup was taken from an etcd of a newer minor release than the
// restored cluster will run. The backup's version is known when an EtcdBackup in the namespace
// recorded the object restored.
func (r *Reconciler) checkVersion(ctx context.Context, rs *etcdv1beta2.EtcdRestore, version string) error {
	list := &etcdv1beta2.EtcdBackupList{}
	if err := r.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		return fmt.Errorf("listing EtcdBackups for the backup's etcd version: %w", err)
	}
	for _, b := range list.Items {
		if b.Status.Location != rs.Status.BackupLocation || b.Status.EtcdVersion == "" {
			continue
		}
		newer, err := newerMinor(b.Status.EtcdVersion, version)
		if err != nil {
			return reason.Errorf(etcdv1beta2.ReasonIncompatibleVersion, "comparing the backup's etcd version (EtcdBackup %s) with the cluster's: %w"+noChange, b.Name, err)
		}
		if newer {
			return reason.Errorf(etcdv1beta2.ReasonIncompatibleVersion, "the backup was taken from etcd %s (EtcdBackup %s) but the restored cluster would run etcd %s, an older release that cannot be trusted with a newer one's data: restore into a cluster whose version is %s or newer"+noChange,
				b.Status.EtcdVersion, b.Name, version, majorMinor(b.Status.EtcdVersion))
		}
		return nil
	}
	return nil
}

// newerMinor reports whether etcd version a is of a newer major.minor release than b. A
// malformed version is an error: whether the data fits the cluster cannot be told.
func newerMinor(a, b string) (bool, error) {
	va, err := clusterversion.ParseVersion(a)
	if err != nil {
		return false, err
	}
	vb, err := clusterversion.ParseVersion(b)
	if err != nil {
		return false, err
	}
	return va.Major() > vb.Major() || (va.Major() == vb.Major() && va.Minor() > vb.Minor()), nil
}

// majorMinor is "MAJOR.MINOR" of a version newerMinor parsed.
func majorMinor(v string) string {
	pv, err := clusterversion.ParseVersion(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("%d.%d", pv.Major(), pv.Minor())
}

// checkSecrets checks the Secrets the restore needs: the storage credentials the seed pod
// mounts (they exist and configure the store as the agent will), the operator certificate and
// etcd credentials the members are verified with (they exist and parse), and the member TLS
// secrets (they exist with the files etcd is started with).
func (r *Reconciler) checkSecrets(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, src *source) error {
	if src.loc.Secret != "" || src.loc.CA != nil {
		store, err := r.open(ctx, rs, src.loc)
		if err != nil {
			if reason.Of(err) == "" {
				return err
			}
			return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the seed could not use the storage Secrets it mounts: %v"+noChange, err)
		}
		store.Close()
	}
	// The operator certificate and the etcd credentials the restored members are verified
	// with: without them the restore could not tell success from failure. TLS.auto certificates
	// are the etcd operator's to make, for the cluster the restore creates.
	probe := c
	if c.Spec.TLS != nil && c.Spec.TLS.Auto != nil {
		probe = c.DeepCopy()
		probe.Spec.TLS = nil
	}
	if _, err := kubesecret.OperatorAccess(ctx, r.Client, probe); err != nil {
		if reason.Of(err) == "" {
			return err
		}
		return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the restored members could not be verified: %v"+noChange, err)
	}
	if c.Spec.TLS == nil || c.Spec.TLS.Static == nil || c.Spec.TLS.Static.Member == nil {
		return nil
	}
	m := c.Spec.TLS.Static.Member
	for _, s := range []struct {
		name string
		keys []string
	}{
		{m.PeerSecret, []string{"peer-ca.crt", "peer.crt", "peer.key"}},
		{m.ServerSecret, []string{"server-ca.crt", "server.crt", "server.key"}},
	} {
		if s.name == "" {
			continue
		}
		secret := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: s.name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "member TLS Secret %s that the seed mounts does not exist"+noChange, s.name)
			}
			return fmt.Errorf("getting member TLS Secret %s: %w", s.name, err)
		}
		for _, k := range s.keys {
			if len(secret.Data[k]) == 0 {
				return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "member TLS Secret %s that the seed mounts has no %s"+noChange, s.name, k)
			}
		}
	}
	return nil
}

// checkStorageClass fails when the members' volumes name a StorageClass that does not exist:
// their claims would stay Pending.
func (r *Reconciler) checkStorageClass(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	class := c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName
	if class == nil || *class == "" {
		return nil
	}
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: *class}, &storagev1.StorageClass{})
	switch {
	case apierrors.IsNotFound(err):
		return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "StorageClass %s, which the members' volumes name, does not exist: their claims would stay Pending"+noChange, *class)
	case err != nil:
		return fmt.Errorf("getting StorageClass %s: %w", *class, err)
	}
	return nil
}
