package etcdbackupschedule

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Default history limits, as the API defaults them.
const (
	defaultSuccessfulHistory = 3
	defaultFailedHistory     = 1
)

// observeChildren lists the schedule's EtcdBackups and records the active ones and the newest
// success in status.
func (r *Reconciler) observeChildren(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule) ([]etcdv1beta2.EtcdBackup, error) {
	list := &etcdv1beta2.EtcdBackupList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{ScheduleLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing EtcdBackups of schedule %s/%s: %w", s.Namespace, s.Name, err)
	}
	var children []etcdv1beta2.EtcdBackup
	for _, b := range list.Items {
		if metav1.IsControlledBy(&b, s) {
			children = append(children, b)
		}
	}
	slices.SortFunc(children, func(a, b etcdv1beta2.EtcdBackup) int { return scheduledTime(&b).Compare(scheduledTime(&a)) })

	// The newest success is the newest run that completed (completion times have second
	// precision and tie); without one among the children, status keeps what it recorded.
	st := &s.Status
	st.Active = nil
	newest := true
	for i := range children {
		b := &children[i]
		if !b.IsFinished() {
			st.Active = append(st.Active, b.Name)
			continue
		}
		if newest && b.Status.Phase == etcdv1beta2.BackupPhaseCompleted && b.Status.CompletionTime != nil {
			newest = false
			st.LastSuccessfulTime = b.Status.CompletionTime.DeepCopy()
			st.LastSuccessfulBackup = b.Name
			st.LastSuccessfulLocation = b.Status.Location
		}
	}
	return children, nil
}

// scheduledTime is the run a backup was created for (its annotation), or its creation time.
func scheduledTime(b *etcdv1beta2.EtcdBackup) time.Time {
	if v, ok := b.Annotations[ScheduledTimeAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	return b.CreationTimestamp.Time
}

// applyHistoryLimits deletes the oldest finished EtcdBackups beyond the successful and failed
// history limits. children are sorted newest first. The backup objects in the bucket are not
// touched: retention governs those.
func (r *Reconciler) applyHistoryLimits(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, children []etcdv1beta2.EtcdBackup) error {
	keepOK, keepFailed := int32(defaultSuccessfulHistory), int32(defaultFailedHistory)
	if v := s.Spec.SuccessfulBackupsHistoryLimit; v != nil {
		keepOK = *v
	}
	if v := s.Spec.FailedBackupsHistoryLimit; v != nil {
		keepFailed = *v
	}
	var ok, failed int32
	for i := range children {
		b := &children[i]
		var over bool
		switch b.Status.Phase {
		case etcdv1beta2.BackupPhaseCompleted:
			ok++
			over = ok > keepOK
		case etcdv1beta2.BackupPhaseFailed:
			failed++
			over = failed > keepFailed
		}
		if !over {
			continue
		}
		if err := r.Delete(ctx, b, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old EtcdBackup %s/%s: %w", b.Namespace, b.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Deleted EtcdBackup beyond the history limit", "backup", b.Name, "phase", b.Status.Phase)
	}
	return nil
}
