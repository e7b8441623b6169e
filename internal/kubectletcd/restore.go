package kubectletcd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// restore creates an EtcdRestore of a cluster, in place or into a new cluster, after the user
// confirmed what it replaces: `kubectl etcd restore <cluster>`. With -o it prints the EtcdRestore
// as the API returns it: created, or with --wait finished; the prompt then goes to stderr.
func (a *App) restore(ctx context.Context, args []string) error {
	fs := a.flagSet("restore")
	backupName := fs.String("backup", "", "restore this successful EtcdBackup")
	schedule := fs.String("schedule", "", "restore the newest successful backup of this EtcdBackupSchedule (default: the cluster's only schedule)")
	into := fs.String("into", "", "restore into a new cluster of this name, with the cluster's spec as template, leaving the cluster as it is")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	wait := fs.Bool("wait", false, "follow the restore until it Succeeded or Failed")
	timeout := fs.Duration("timeout", time.Hour, "with --wait, how long to follow the restore")
	to := fs.String("to", "", "restore to a point after the backup with the continuous capture stored next to it: a revision, an RFC 3339 time, or 'captured' for the newest revision captured")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "restore <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("restore", *output); err != nil {
		return err
	}
	point, err := parsePoint(*to)
	if err != nil {
		return a.usageError("restore: " + err.Error())
	}
	if *backupName != "" && *schedule != "" {
		return a.usageError("restore: --backup and --schedule exclude each other")
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	spec, what, err := restoreSource(ctx, c, r, *backupName, *schedule)
	if err != nil {
		return err
	}
	target := r.cluster
	if *into != "" {
		if *into == r.cluster.Name {
			return a.usageError("restore: --into names the cluster itself; leave it out to restore in place")
		}
		spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: r.cluster.Name}
		if target, err = getClusterIfExists(ctx, c, r.cluster.Namespace, *into); err != nil {
			return err
		}
	}
	spec.PointInTime = point
	if point != nil {
		what += ", brought to " + *to + " by the capture after it"
	}
	spec.EtcdCluster = etcdv1beta2.EtcdClusterRef{Name: r.cluster.Name}
	if *into != "" {
		spec.EtcdCluster.Name = *into
	}
	progress := a.progress(*output)
	if target != nil && !*yes && !a.confirm(progress, target, what) {
		fmt.Fprintln(progress, "Aborted: nothing was created.")
		return errOutcome
	}
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.cluster.Namespace, Name: manualName(spec.EtcdCluster.Name, "-restore-", a.Now())},
		Spec:       *spec,
	}
	if err := c.Create(ctx, rs); err != nil {
		return fmt.Errorf("creating EtcdRestore %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	how := "in place"
	if *into != "" {
		how = "into new cluster " + *into + " (template " + r.cluster.Name + ")"
	}
	fmt.Fprintf(progress, "etcdrestore %s/%s created: %s, %s\n", rs.Namespace, rs.Name, what, how)
	if !*wait {
		if *output != "" {
			return a.printRestore(rs, *output)
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := a.followRestore(wctx, c, rs, progress, "EtcdRestore", restoreFinished); err != nil {
		return err
	}
	return a.printRestore(rs, *output)
}

// restoreSource is the restore spec naming the backup (backupRef or backupScheduleRef) and a
// description of that backup for the prompt.
func restoreSource(ctx context.Context, c client.Reader, r *related, backupName, schedule string) (*etcdv1beta2.RestoreSpec, string, error) {
	if backupName != "" {
		b, err := getBackup(ctx, c, r.cluster.Namespace, backupName)
		if err != nil {
			return nil, "", err
		}
		if b.Status.Phase != etcdv1beta2.BackupPhaseCompleted {
			return nil, "", fmt.Errorf("EtcdBackup %s/%s is %q, not Completed: only a successful backup can be restored", b.Namespace, b.Name, b.Status.Phase)
		}
		what := fmt.Sprintf("backup %s (%s, revision %d, taken %s)", b.Name, orDash(b.Status.Location), b.Status.EtcdRevision, stamp(b.Status.LastSuccessDate))
		return &etcdv1beta2.RestoreSpec{BackupRef: &etcdv1beta2.LocalObjectReference{Name: b.Name}}, what, nil
	}
	s, err := r.schedule(schedule)
	if err != nil {
		return nil, "", err
	}
	if s.Status.LastSuccessfulTime == nil {
		return nil, "", fmt.Errorf("EtcdBackupSchedule %s/%s has no successful backup yet", s.Namespace, s.Name)
	}
	what := fmt.Sprintf("the newest backup of schedule %s (now %s, %s, taken %s)", s.Name, orDash(s.Status.LastSuccessfulBackup), orDash(s.Status.LastSuccessfulLocation), stamp(s.Status.LastSuccessfulTime))
	return &etcdv1beta2.RestoreSpec{BackupScheduleRef: &etcdv1beta2.LocalObjectReference{Name: s.Name}}, what, nil
}

// getClusterIfExists returns EtcdCluster ns/name, or nil when there is none.
func getClusterIfExists(ctx context.Context, c client.Reader, ns, name string) (*etcdv1beta2.EtcdCluster, error) {
	ec := &etcdv1beta2.EtcdCluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting EtcdCluster %s/%s: %w", ns, name, err)
	}
	return ec, nil
}

// confirm names the cluster a restore replaces and what replaces it on w, and asks for the
// cluster's name on In.
func (a *App) confirm(w io.Writer, target *etcdv1beta2.EtcdCluster, what string) bool {
	st := &target.Status
	fmt.Fprintf(w, "This REPLACES EtcdCluster %s/%s (%s, %d of %d members ready, etcd %s, last revision %d)\nwith %s.\n",
		target.Namespace, target.Name, orDash(string(st.Phase)), st.ReadyMembers, st.Size, orDash(st.CurrentVersion), st.LastRevision, what)
	fmt.Fprintf(w, "Its current data is lost; writes made after the backup are gone.\nType the cluster name (%s) to continue: ", target.Name)
	line, _ := bufio.NewReader(a.In).ReadString('\n')
	return strings.TrimSpace(line) == target.Name
}

// followRestore polls rs until finished(rs), printing each new phase to w; what names rs in the
// errors ("EtcdRestore", "drill EtcdRestore"). A failed read, NotFound included, is returned
// wrapped: a caller for which a deletion means something tests it with apierrors.IsNotFound.
func (a *App) followRestore(ctx context.Context, c client.Reader, rs *etcdv1beta2.EtcdRestore, w io.Writer, what string, finished func(*etcdv1beta2.EtcdRestore) bool) error {
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	last := etcdv1beta2.RestorePhase("")
	for {
		if err := c.Get(ctx, key, rs); err != nil {
			return fmt.Errorf("following %s %s: %w", what, key, err)
		}
		if p := rs.Status.Phase; p != last && p != "" {
			fmt.Fprintf(w, "phase %s\n", p)
			last = p
		}
		if finished(rs) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s %s (phase %q; is the restore operator running?): %w", what, key, rs.Status.Phase, ctx.Err())
		case <-tick.C:
		}
	}
}

// restoreFinished reports whether the restore operator is done with rs: phase Succeeded or
// Failed.
func restoreFinished(rs *etcdv1beta2.EtcdRestore) bool {
	return rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed
}

// printRestore prints a finished restore, or with output (json or yaml) rs as an object
// (finished, or just created without --wait); a Failed one is errOutcome.
func (a *App) printRestore(rs *etcdv1beta2.EtcdRestore, output string) error {
	st := &rs.Status
	failed := st.Phase == etcdv1beta2.RestorePhaseFailed
	if output != "" {
		return writeAPIObject(a.Out, output, rs, "EtcdRestore", failed)
	}
	if failed {
		fmt.Fprintf(a.Out, "FAILED: %s\n", orDash(st.Reason))
		return errOutcome
	}
	fmt.Fprintf(a.Out, "Succeeded: %s restored at revision %d", orDash(st.BackupLocation), st.RestoredRevision)
	if st.Duration != nil {
		fmt.Fprintf(a.Out, " in %s", st.Duration.Duration)
	}
	if v := st.Verification; v != nil {
		fmt.Fprintf(a.Out, ", %d keys verified", v.Keys)
	}
	fmt.Fprintln(a.Out)
	return nil
}

// parsePoint reads restore's --to: empty (no point in time), "captured" (the newest revision
// captured), a revision, or an RFC 3339 time.
func parsePoint(to string) (*etcdv1beta2.PointInTime, error) {
	switch to {
	case "":
		return nil, nil
	case "captured":
		return &etcdv1beta2.PointInTime{}, nil
	}
	if rev, err := strconv.ParseInt(to, 10, 64); err == nil {
		if rev < 2 {
			return nil, fmt.Errorf("--to %d: a revision is at least 2", rev)
		}
		return &etcdv1beta2.PointInTime{Revision: rev}, nil
	}
	t, err := time.Parse(time.RFC3339, to)
	if err != nil {
		return nil, fmt.Errorf("--to %q is not a revision, an RFC 3339 time or 'captured'", to)
	}
	return &etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t}}, nil
}
