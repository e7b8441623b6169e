package kubectletcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubename"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// ManualBackupOfAnnotation is set on a backup `backup now` created to the schedule whose
// template it copied. The backup carries neither the schedule's label nor an owner reference:
// the schedule's history limits do not delete it, and deleting the schedule does not either.
const ManualBackupOfAnnotation = "etcd.database.coreos.com/manual-backup-of"

// manualTimeFormat is the UTC time in the name of a manual backup or restore, to the second.
const manualTimeFormat = "20060102t150405z"

// manualName is <base><kind><UTC time>, shortened with a hash of base when it would not fit a
// label value: the restore operator labels the pods it makes with the EtcdRestore's name, and a
// longer name fails its preflight.
func manualName(base, kind string, now time.Time) string {
	return kubename.Fit(base, kind+now.UTC().Format(manualTimeFormat), validation.LabelValueMaxLength)
}

// errOutcome is returned when the command printed a failed outcome itself (exit code 1).
var errOutcome = errors.New("outcome printed")

// backupNow creates a one-shot EtcdBackup from a schedule's template: `kubectl etcd backup now`.
// With -o it prints the EtcdBackup as the API returns it: created, or with --wait finished.
func (a *App) backupNow(ctx context.Context, args []string) error {
	fs := a.flagSet("backup now")
	schedule := fs.String("schedule", "", "the EtcdBackupSchedule whose backupTemplate to use (default: the cluster's only one)")
	wait := fs.Bool("wait", false, "follow the backup until it is Completed or Failed")
	timeout := fs.Duration("timeout", 30*time.Minute, "with --wait, how long to follow the backup")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "backup now <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("backup now", *output); err != nil {
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
	b := manualBackup(s, a.Now())
	if err := c.Create(ctx, b); err != nil {
		return fmt.Errorf("creating EtcdBackup %s/%s: %w", b.Namespace, b.Name, err)
	}
	progress := a.progress(*output)
	fmt.Fprintf(progress, "etcdbackup %s/%s created from schedule %s\n", b.Namespace, b.Name, s.Name)
	if !*wait {
		if *output != "" {
			return a.printOutcome(b, *output)
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := a.follow(wctx, c, b, progress); err != nil {
		return err
	}
	return a.printOutcome(b, *output)
}

// manualBackup is the EtcdBackup a manual run of s at now creates: the template's spec with a
// prefix path (as the schedule's own runs), named <schedule>-manual-<UTC time>.
func manualBackup(s *etcdv1beta2.EtcdBackupSchedule, now time.Time) *etcdv1beta2.EtcdBackup {
	tmpl := &s.Spec.BackupTemplate
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        manualName(s.Name, "-manual-", now),
			Labels:      maps.Clone(tmpl.Metadata.Labels),
			Annotations: maps.Clone(tmpl.Metadata.Annotations),
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[ManualBackupOfAnnotation] = s.Name
	b.Spec.PathType = etcdv1beta2.BackupPathPrefix
	return b
}

// follow polls b until the backup operator finishes it, printing each new phase to w.
func (a *App) follow(ctx context.Context, c client.Reader, b *etcdv1beta2.EtcdBackup, w io.Writer) error {
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	last := etcdv1beta2.BackupPhase("")
	for {
		if err := c.Get(ctx, key, b); err != nil {
			return fmt.Errorf("following EtcdBackup %s: %w", key, err)
		}
		if b.Status.Phase != last && b.Status.Phase != "" {
			fmt.Fprintf(w, "phase %s\n", b.Status.Phase)
			last = b.Status.Phase
		}
		if b.IsFinished() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for EtcdBackup %s (phase %q; is the backup operator running?): %w", key, b.Status.Phase, ctx.Err())
		case <-tick.C:
		}
	}
}

// printOutcome prints a finished backup, or with output (json or yaml) b as an object (finished,
// or just created without --wait); a Failed one is errOutcome.
func (a *App) printOutcome(b *etcdv1beta2.EtcdBackup, output string) error {
	st := &b.Status
	failed := st.Phase == etcdv1beta2.BackupPhaseFailed
	if output != "" {
		return writeAPIObject(a.Out, output, b, "EtcdBackup", failed)
	}
	if failed {
		fmt.Fprintf(a.Out, "FAILED: %s\n", orDash(st.Reason))
		return errOutcome
	}
	fmt.Fprintf(a.Out, "Completed: %s\n", orDash(st.Location))
	fmt.Fprintf(a.Out, "  revision %d, %s, sha256 %s, etcd %s, from %s", st.EtcdRevision, byteSize(st.Size), orDash(st.SHA256), orDash(st.EtcdVersion), orDash(st.Member))
	if st.Duration != nil {
		fmt.Fprintf(a.Out, ", took %s", st.Duration.Duration)
	}
	fmt.Fprintln(a.Out)
	return nil
}
