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

// choice is what selectBackup records before any member exists.
type choice struct {
	selected *etcdv1beta2.SelectedBackup
	point    *etcdv1beta2.RestoredPoint
}

// selectBackup chooses the backup a source with backupSelection Newest restores
// (restoreboot.Select: the newest of the wanted cluster under the prefix that reads whole and
// verifies, at or before the point in time if there is one) and records it in c's
// status.restore.selected; for a source with pointInTime, it then resolves the point to the
// revision the capture after that backup reaches (restoreboot.ResolvePoint) and records it in
// status.restore.pointInTime. The reads run in the worker pool, outside the reconcile
// workers; this pass queues them and the pass the pool's event brings records the outcome.
// Members are created only on a later pass, from the choice the API server holds
// (createRestoreMembers reads it live), so they all restore the same object to the same
// revision.
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
		newest, src := restoreboot.Newest(c), c.Spec.Bootstrap.Restore.Source
		r.Pool.Submit(key, token, func(ctx context.Context) (any, error) {
			store, err := storage.OpenServed(ctx, base.Loc, secrets, storage.AmbientPolicy{}, storage.ServerWait)
			if err != nil {
				return nil, err
			}
			defer store.Close()
			var ch choice
			loc, rev := base.Loc, src.Revision
			if newest {
				if ch.selected, err = restoreboot.Select(ctx, store, want, r.Options.KubeID, now, src.PointInTime); err != nil {
					return nil, err
				}
				if loc, err = loc.At(ch.selected.Location); err != nil {
					return nil, err
				}
				rev = ch.selected.Revision
			}
			if src.PointInTime != nil {
				if ch.point, err = restoreboot.ResolvePoint(ctx, store, loc.Key, rev, src.PointInTime); err != nil {
					return nil, err
				}
			}
			return ch, nil
		})
		what := fmt.Sprintf("choosing the newest backup of %s/%s under %s: reading it whole", want.Namespace, want.Cluster, base.Loc.URL())
		if !newest {
			what = fmt.Sprintf("reading the capture after %s", base.Loc.URL())
		}
		if src.PointInTime != nil {
			what += fmt.Sprintf("; resolving the point in time (%s)", restoreboot.Target(src.PointInTime))
		}
		setRestored(c, false, etcdv1beta2.ReasonRestoring, what)
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
	ch := done.Value.(choice)
	if c.Status.Restore == nil {
		c.Status.Restore = &etcdv1beta2.ClusterRestoreStatus{}
	}
	var msgs []string
	if sel := ch.selected; sel != nil {
		c.Status.Restore.Selected = sel
		msg := fmt.Sprintf("Chose %s (%d bytes, sha256 %s, read whole and valid)", sel.Location, sel.Size, sel.SHA256)
		if len(sel.Skipped) > 0 {
			r.event(c, corev1.EventTypeWarning, "BackupsSkipped", "Skipped newer backups that do not verify: "+strings.Join(sel.Skipped, "; "))
		}
		r.event(c, corev1.EventTypeNormal, "BackupSelected", msg)
		msgs = append(msgs, msg)
	}
	if pt := ch.point; pt != nil {
		c.Status.Restore.PointInTime = pt
		msg := fmt.Sprintf("Resolved the point in time to revision %d: %d captured revisions replayed onto the backup", pt.Revision, pt.Revisions)
		if pt.Time != nil {
			msg += fmt.Sprintf(", the last received at %s", pt.Time.UTC().Format(time.RFC3339))
		}
		if !pt.Exact {
			msg += "; the capture ends there, before the target: this is the newest point captured"
		}
		r.event(c, corev1.EventTypeNormal, "PointInTimeResolved", msg)
		msgs = append(msgs, msg)
	}
	setRestored(c, false, etcdv1beta2.ReasonRestoring, strings.Join(msgs, "; ")+"; creating the members")
	return nil
}

// choosing reports whether c's source still has a choice to make before its members exist
// (the backup of a Newest source, the revision of a pointInTime): a failure then (no backup
// yet, a store that does not answer, a capture that does not reach the point yet) is retried,
// not final.
func choosing(c *etcdv1beta2.EtcdCluster) bool {
	if restoreboot.Newest(c) && selected(c) == nil {
		return true
	}
	src := c.Spec.Bootstrap.Restore.Source
	return src != nil && src.PointInTime != nil && (c.Status.Restore == nil || c.Status.Restore.PointInTime == nil)
}
