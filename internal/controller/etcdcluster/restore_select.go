package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// defaultSelectRetry is how long a failed choice of the newest backup waits before the next
// one (a bucket still being copied in, a store that does not answer): nothing was created, so
// trying again is safe. Reconciler.SelectRetry overrides it.
const defaultSelectRetry = time.Minute

func (r *Reconciler) selectRetry() time.Duration {
	if r.SelectRetry > 0 {
		return r.SelectRetry
	}
	return defaultSelectRetry
}

// selected is the backup the live cluster's Newest source chose, or nil.
func selected(live *etcdv1beta2.EtcdCluster) *etcdv1beta2.SelectedBackup {
	if st := live.Status.Restore; st != nil {
		return st.Selected
	}
	return nil
}

// selectBackup chooses the backup a source with backupSelection Newest restores
// (restoreboot.Select: the newest of the wanted cluster under the prefix that reads whole and
// verifies) and records it in c's status.restore.selected. The read runs in the worker pool,
// outside the reconcile workers; this pass queues it and the pass the pool's event brings
// records the outcome. Members are created only on a later pass, from the choice the API
// server holds (createRestoreMembers reads it live), so they all restore the same object.
func (r *Reconciler) selectBackup(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	key, token := client.ObjectKeyFromObject(c), string(c.UID)
	done, pending := r.Pool.Take(key, token)
	if pending {
		// Running (the pool's event brings the next pass), or held after a failure: that
		// failure still stands until the next attempt.
		if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored); cond != nil &&
			cond.Status == metav1.ConditionFalse && cond.Reason != etcdv1beta2.ReasonRestoring {
			return reason.Errorf(cond.Reason, "choosing the backup to restore: %s", cond.Message)
		}
		return nil
	}
	if done == nil {
		base, err := restoreboot.FromSpec(c.Spec.Bootstrap.Restore.Source)
		if err != nil {
			setRestored(c, false, reason.Of(err), err.Error())
			return err
		}
		want, err := restoreboot.Wanted(c)
		if err != nil {
			setRestored(c, false, reason.Of(err), err.Error())
			return err
		}
		secrets := storage.APISecrets{Reader: r.Client, Namespace: c.Namespace}
		now := r.Clock.Now()
		r.Pool.Submit(key, token, func(ctx context.Context) (any, error) {
			store, err := storage.Open(ctx, base.Loc, secrets, storage.AmbientPolicy{})
			if err != nil {
				return nil, err
			}
			defer store.Close()
			return restoreboot.Select(ctx, store, want, now)
		})
		setRestored(c, false, etcdv1beta2.ReasonRestoring, fmt.Sprintf("choosing the newest backup of %s/%s under %s: reading it whole", want.Namespace, want.Cluster, base.Loc.URL()))
		return nil
	}
	if done.Err != nil {
		r.Pool.Hold(key, token, r.Clock.Now().Add(r.selectRetry()))
		why := reason.Of(done.Err)
		if why == "" {
			why = etcdv1beta2.ReasonStorageUnreachable
		}
		msg := fmt.Sprintf("%v; no member was created, trying again in %s", done.Err, r.selectRetry())
		if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored); cond == nil || cond.Message != msg {
			r.event(c, corev1.EventTypeWarning, why, "Choosing the backup to restore: "+msg)
		}
		setRestored(c, false, why, msg)
		return reason.Errorf(why, "choosing the backup to restore: %s", msg)
	}
	sel := done.Value.(*etcdv1beta2.SelectedBackup)
	if c.Status.Restore == nil {
		c.Status.Restore = &etcdv1beta2.ClusterRestoreStatus{}
	}
	c.Status.Restore.Selected = sel
	msg := fmt.Sprintf("Chose %s (%d bytes, sha256 %s, read whole and valid)", sel.Location, sel.Size, sel.SHA256)
	if len(sel.Skipped) > 0 {
		r.event(c, corev1.EventTypeWarning, "BackupsSkipped", "Skipped newer backups that do not verify: "+strings.Join(sel.Skipped, "; "))
	}
	r.event(c, corev1.EventTypeNormal, "BackupSelected", msg)
	setRestored(c, false, etcdv1beta2.ReasonRestoring, msg+"; creating the members")
	return nil
}

// choosing reports whether c's Newest source has not chosen its backup yet: a failure then
// (no backup yet, a store that does not answer) is retried, not final.
func choosing(c *etcdv1beta2.EtcdCluster) bool {
	return restoreboot.Newest(c) && selected(c) == nil
}
