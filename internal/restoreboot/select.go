package restoreboot

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Newest reports whether c's source is a prefix whose newest backup the etcd operator chooses.
func Newest(c *etcdv1beta2.EtcdCluster) bool {
	b := c.Spec.Bootstrap
	return b != nil && b.Restore != nil && b.Restore.Source != nil &&
		b.Restore.Source.BackupSelection == etcdv1beta2.BackupSelectionNewest
}

// Wanted is the cluster whose backups a Newest source restores: c's source's `of`, its unset
// fields c's own namespace and name (any cluster ID).
func Wanted(c *etcdv1beta2.EtcdCluster) (snapshot.Identity, error) {
	id := snapshot.Identity{Namespace: c.Namespace, Cluster: c.Name}
	of := c.Spec.Bootstrap.Restore.Source.Of
	if of == nil {
		return id, nil
	}
	if of.Namespace != "" {
		id.Namespace = of.Namespace
	}
	if of.Name != "" {
		id.Cluster = of.Name
	}
	if of.ClusterID != "" {
		cid, err := strconv.ParseUint(of.ClusterID, 16, 64)
		if err != nil {
			return id, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "bootstrap.restore.source.of.clusterID %q is not a hex cluster ID: %w", of.ClusterID, err)
		}
		id.ClusterID = cid
	}
	return id, nil
}

// maxSkipped bounds SelectedBackup.Skipped (the API's MaxItems).
const maxSkipped = 16

// Select chooses the backup a Newest source restores: it lists the prefix of store, and reads
// whole, newest first, the backups of want (want.ClusterID 0: any incarnation); the first that
// is a complete etcd snapshot is chosen, with its size and sha256. A backup that is corrupt or
// gone by the time it is read is skipped and named in Skipped; a store that fails stops the
// selection (StorageUnreachable: try again later, nothing skipped for it). No backup of want
// is NoSuccessfulBackup, naming the clusters whose backups are there; backups without a
// cluster identity (legacy keys) count only when no other cluster's backup shares the prefix.
//
// The operator runs in the Kubernetes cluster kube ("" unknown): want's backups written there
// are chosen first; when there are none, those of the one other Kubernetes cluster that wrote
// want's backups (a cluster restored into a rebuilt Kubernetes cluster); when two or more other
// Kubernetes clusters did, none, and NoSuccessfulBackup asks for the cluster ID
// (retention.PreferKube).
//
// With a point in time (at not nil), only backups taken at or before it count.
func Select(ctx context.Context, store *storage.Store, want snapshot.Identity, kube string, now time.Time, at *etcdv1beta2.PointInTime) (*etcdv1beta2.SelectedBackup, error) {
	prefix := store.Key
	objs, err := store.List(ctx, prefix)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonStorageUnreachable, "listing backups under %s: %w", store.URL(), err)
	}
	sizes := make(map[string]int64, len(objs))
	for _, o := range objs {
		sizes[o.Key] = o.Size
	}
	var candidates, legacy []retention.Backup
	var others []string
	late := 0
	for _, b := range retention.ParseAt(prefix, objs, now) {
		switch {
		case (!b.Tagged() || matches(want, b.Identity)) && !TakenBefore(b.KeyInfo, at):
			late++
		case b.Tagged() && matches(want, b.Identity):
			candidates = append(candidates, b)
		case b.Tagged():
			if d := b.Describe(); !slices.Contains(others, d) {
				others = append(others, d)
			}
		default:
			legacy = append(legacy, b)
		}
	}
	if len(candidates) == 0 && len(others) == 0 {
		candidates = legacy
	}
	picked, kubes := retention.PreferKube(candidates, kube)
	if len(kubes) > 0 {
		ids := make([]string, 0, len(candidates))
		for _, b := range candidates {
			if d := fmt.Sprintf("cluster ID %016x in Kubernetes cluster %s", b.ClusterID, b.Kube); b.Kube != "" && !slices.Contains(ids, d) {
				ids = append(ids, d)
			}
		}
		return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup,
			"the backups of %s under %s were written in %d other Kubernetes clusters (%s) and none in this one: which is meant cannot be told; set bootstrap.restore.source.of.clusterID to the cluster ID of the one to restore",
			describe(want), store.URL(), len(kubes), strings.Join(ids, "; "))
	}
	candidates = picked
	if len(candidates) == 0 {
		if late > 0 && len(others) == 0 {
			return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "no backup under %s was taken at or before the point in time %s (%d after it)", store.URL(), Target(at), late)
		}
		if len(others) > 0 {
			return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "no backup of %s under %s: the backups there are of other clusters: %s", describe(want), store.URL(), strings.Join(others, ", "))
		}
		if len(objs) > 0 {
			return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "none of the %d objects under %s is a backup written under that prefix: the path must be exactly the path of the storage block the backups were written with (their keys are <path>_<time>_v<revision>_<namespace>_<name>_<cluster ID>)", len(objs), store.URL())
		}
		return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "no backup written by this project under %s", store.URL())
	}
	var skipped []string
	for _, b := range candidates {
		got, err := read(ctx, store, b.Key, sizes[b.Key])
		if err != nil {
			switch reason.Of(err) {
			case etcdv1beta2.ReasonBackupCorrupt, etcdv1beta2.ReasonBackupNotFound:
				if len(skipped) < maxSkipped {
					skipped = append(skipped, fmt.Sprintf("%s: %v", store.URLOf(b.Key), err))
				}
				continue
			}
			return nil, err
		}
		t := metav1.NewTime(b.Time)
		return &etcdv1beta2.SelectedBackup{Location: store.URLOf(b.Key), Size: got.Size, SHA256: got.SHA256,
			Revision: b.Revision, Time: &t, Skipped: skipped}, nil
	}
	return nil, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "none of the %d backups of %s under %s reads whole and verifies: %s", len(candidates), describe(want), store.URL(), strings.Join(skipped, "; "))
}

// read reads the object key (size bytes, as listed) whole under a backup's deadline.
func read(ctx context.Context, store *storage.Store, key string, size int64) (restoreseed.Fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshot.DefaultTimeout(size))
	defer cancel()
	return restoreseed.Fetch(ctx, store, key, restoreseed.Expect{Size: size}, io.Discard)
}

// matches reports whether a backup of got is one of want's.
func matches(want, got snapshot.Identity) bool {
	return got.Namespace == want.Namespace && got.Cluster == want.Cluster &&
		(want.ClusterID == 0 || got.ClusterID == want.ClusterID)
}

// describe renders want for messages.
func describe(want snapshot.Identity) string {
	if want.ClusterID == 0 {
		return fmt.Sprintf("EtcdCluster %s/%s", want.Namespace, want.Cluster)
	}
	return fmt.Sprintf("EtcdCluster %s/%s with cluster ID %x", want.Namespace, want.Cluster, want.ClusterID)
}
