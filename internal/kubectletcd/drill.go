package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// ManualDrillAnnotation is set to "true" on a drill `drill now` created. Otherwise the drill is
// the one the backup operator would create for a run at that minute: the schedule's drill
// label, its scheduled-time annotation and the schedule as controller, so the schedule records
// its outcome in status.lastDrill and DrillPassed, counts it as the drill in flight and applies
// restoreDrill.historyLimit to it.
const ManualDrillAnnotation = "etcd.database.coreos.com/manual-drill"

// defaultDrillTTL is restoreDrill.ttlSecondsAfterFinished's API default, for a schedule
// without restoreDrill.
const defaultDrillTTL = 600

// drillNow creates a restore drill of a cluster's schedule now and follows it to its outcome:
// `kubectl etcd drill now <cluster>`.
func (a *App) drillNow(ctx context.Context, args []string) error {
	fs := a.flagSet("drill now")
	schedule := fs.String("schedule", "", "the EtcdBackupSchedule whose newest successful backup to drill (default: the cluster's only one)")
	wait := fs.Bool("wait", true, "follow the drill until it passed or failed; --wait=false creates it and returns")
	timeout := fs.Duration("timeout", time.Hour, "how long to follow the drill")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "drill now <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("drill now", *output); err != nil {
		return err
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	s, err := r.schedule(*schedule)
	if err != nil {
		return err
	}
	b, err := drillBackup(ctx, c, s)
	if err != nil {
		return err
	}
	if active, err := activeDrill(ctx, c, s); err != nil {
		return err
	} else if active != "" {
		return fmt.Errorf("drill %s of schedule %s/%s has not finished: one drill at a time (kubectl get etcdrestore %s -n %s)", active, s.Namespace, s.Name, active, s.Namespace)
	}
	rs, err := manualDrill(c, s, r.cluster, b, a.Now())
	if err != nil {
		return err
	}
	progress := a.progress(*output)
	if err := c.Create(ctx, rs); err != nil {
		return fmt.Errorf("creating drill EtcdRestore %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	fmt.Fprintf(progress, "drill %s/%s created: backup %s (%s) into scratch cluster %s (template %s), deleted %ds after the drill finishes\n",
		rs.Namespace, rs.Name, b.Name, orDash(b.Status.Location), rs.Spec.EtcdCluster.Name, rs.Spec.ClusterTemplate.Name, *rs.Spec.TTLSecondsAfterFinished)
	if !*wait {
		if *output != "" {
			return writeAPIObject(a.Out, *output, rs, "EtcdRestore", false)
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := a.followRestore(wctx, c, rs, progress, "drill EtcdRestore", drillFinished); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("drill EtcdRestore %s was deleted before it finished", client.ObjectKeyFromObject(rs))
		}
		return err
	}
	res := etcdv1beta2.DrillResultOf(rs)
	if *output != "" {
		if err := writeObject(a.Out, *output, res); err != nil {
			return err
		}
	} else {
		printDrill(a.Out, rs, res)
	}
	if !res.Passed {
		return errOutcome
	}
	return nil
}

// drillBackup is the backup a drill of s restores now, as the backup operator picks it: the
// schedule's newest successful backup, which must still exist and be Completed.
func drillBackup(ctx context.Context, c client.Reader, s *etcdv1beta2.EtcdBackupSchedule) (*etcdv1beta2.EtcdBackup, error) {
	name := s.Status.LastSuccessfulBackup
	if name == "" {
		return nil, fmt.Errorf("EtcdBackupSchedule %s/%s has no successful backup yet: nothing to drill (kubectl etcd backup now first)", s.Namespace, s.Name)
	}
	b, err := getBackup(ctx, c, s.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("the newest successful backup of schedule %s: %w", s.Name, err)
	}
	if b.Status.Phase != etcdv1beta2.BackupPhaseCompleted {
		return nil, fmt.Errorf("EtcdBackup %s/%s, the newest successful backup of schedule %s, is %q, not Completed", b.Namespace, b.Name, s.Name, b.Status.Phase)
	}
	return b, nil
}

// activeDrill is the name of a drill of s that has not finished, or "".
func activeDrill(ctx context.Context, c client.Reader, s *etcdv1beta2.EtcdBackupSchedule) (string, error) {
	var list etcdv1beta2.EtcdRestoreList
	if err := c.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{etcdbackupschedule.DrillLabel: s.Name}); err != nil {
		return "", fmt.Errorf("listing the drills of EtcdBackupSchedule %s/%s: %w", s.Namespace, s.Name, err)
	}
	for i := range list.Items {
		if rs := &list.Items[i]; metav1.IsControlledBy(rs, s) && !drillFinished(rs) {
			return rs.Name, nil
		}
	}
	return "", nil
}

// manualDrill is the EtcdRestore the backup operator would create for a drill of s at now
// (createDrill): backup b into a scratch cluster of the drill's name, copying
// restoreDrill.clusterTemplate (default: the cluster), with the drill's TTL and point in time (the
// capture's newest with continuousCapture), owned by s.
func manualDrill(c client.Client, s *etcdv1beta2.EtcdBackupSchedule, cluster *etcdv1beta2.EtcdCluster, b *etcdv1beta2.EtcdBackup, now time.Time) (*etcdv1beta2.EtcdRestore, error) {
	name := etcdbackupschedule.DrillName(s.Name, now)
	tmpl := &etcdv1beta2.EtcdClusterRef{Name: cluster.Name}
	ttl := int32(defaultDrillTTL)
	if d := s.Spec.RestoreDrill; d != nil {
		if d.ClusterTemplate != nil {
			tmpl = d.ClusterTemplate.DeepCopy()
		}
		if d.TTLSecondsAfterFinished != nil {
			ttl = *d.TTLSecondsAfterFinished
		}
	}
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      name,
			Labels:    map[string]string{etcdbackupschedule.DrillLabel: s.Name},
			Annotations: map[string]string{
				etcdbackupschedule.ScheduledTimeAnnotation: now.UTC().Format(time.RFC3339),
				ManualDrillAnnotation:                      "true",
			},
		},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:             etcdv1beta2.EtcdClusterRef{Name: name},
			ClusterTemplate:         tmpl,
			BackupRef:               &etcdv1beta2.LocalObjectReference{Name: b.Name},
			PointInTime:             s.DrillPoint(),
			TTLSecondsAfterFinished: &ttl,
		},
	}
	if err := controllerutil.SetControllerReference(s, rs, c.Scheme()); err != nil {
		return nil, fmt.Errorf("setting the owner of EtcdRestore %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return rs, nil
}

// drillFinished reports whether a drill's restore succeeded or failed (its Complete or Failed
// condition), as the backup operator judges it.
func drillFinished(rs *etcdv1beta2.EtcdRestore) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete) ||
		meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
}

// printDrill prints a drill's outcome: what it restored, the time to restore (RTO) and the
// backup's age, or why it failed.
func printDrill(w io.Writer, rs *etcdv1beta2.EtcdRestore, res *etcdv1beta2.DrillResult) {
	if !res.Passed {
		msg := ""
		if c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed); c != nil && c.Message != "" {
			msg = ": " + oneLine(c.Message)
		}
		fmt.Fprintf(w, "FAILED: %s%s\n  restoring %s; kubectl describe etcdrestore %s -n %s\n", res.Reason, msg, orDash(res.Backup), rs.Name, rs.Namespace)
		return
	}
	fmt.Fprintf(w, "PASSED: %s restored into scratch cluster %s, %d keys verified on every member\n", orDash(res.Backup), rs.Spec.EtcdCluster.Name, res.Keys)
	rto, backupAge := "-", "-"
	if res.TimeToRestore != nil {
		rto = res.TimeToRestore.Duration.String()
	}
	if res.BackupAge != nil {
		backupAge = res.BackupAge.Duration.String()
	}
	fmt.Fprintf(w, "  time to restore (RTO) %s, backup age %s\n", rto, backupAge)
	if pt := res.PointInTime; pt != nil && res.RecoveryPointAge != nil {
		fmt.Fprintf(w, "  recovery point (RPO) %s: %d captured revisions replayed onto the backup, to revision %d\n", res.RecoveryPointAge.Duration, pt.Revisions, pt.Revision)
	}
}
