//go:build e2e

// Package kubectl drives the kubectl plugin `kubectl etcd` (internal/kubectletcd) in-process
// against the local cluster, the operators deployed on it and the object stores hack/e2e.sh runs
// (framework.ObjectStores): the day-two commands a user runs, each checked against what the
// cluster, the bucket and etcd hold.
package kubectl

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestKubectlEtcdOnTheLocalCluster runs the plugin's commands one after the other on a 3-member
// EtcdCluster holding keys of known values, backed up by an EtcdBackupSchedule to an S3 bucket:
// status shows the three members, a leader and Available; backup now takes a backup, which
// backups lists in the bucket as the cluster's and snapshot download fetches whole; drill now
// passes; restore --into makes a second cluster serving every key; defrag defragments every
// member; report writes a bundle holding the cluster and no credential; version prints.
//
// A backup taken with `backup now` is not one of the schedule's runs (no schedule label, no owner
// reference), so the schedule records no successful backup for it and drill now and restore
// --schedule refuse. The schedule is created with a daily time that does not come during the
// test; before the drill it is switched to every minute for one run of its own, then suspended.
func TestKubectlEtcdOnTheLocalCluster(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "kubectl-etcd")
	ctx := t.Context()
	tmp := t.TempDir()
	const (
		cluster  = "main"
		into     = "copy"
		schedule = "nightly"
		secret   = "s3-creds"
		prefix   = "/kubectl/" // of the keys written
		written  = 100
	)

	// plugin runs `kubectl etcd <args> --kubeconfig <kubeconfig> -n <ns>` in-process, bounded by
	// timeout (global flags may also come first: internal/kubectletcd TestGlobalFlagsBeforeTheCommand).
	plugin := func(ctx context.Context, timeout time.Duration, args ...string) result {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out, errOut bytes.Buffer
		line := append(slices.Clone(args), "--kubeconfig", f.Kubeconfig, "-n", ns)
		code := kubectletcd.New(strings.NewReader(""), &out, &errOut).Run(ctx, line)
		return result{line: "kubectl etcd " + strings.Join(args, " "), code: code, out: out.String(), err: errOut.String()}
	}

	// 1. The cluster with its keys, the bucket with its credentials Secret, and the schedule:
	// daily at the minute an hour ago (UTC), so its next run is 23 hours away.
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, secret)
	secretKey := s3SecretKey(t, bucket)
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster},
		Spec: etcdv1beta2.ClusterSpec{Size: 3}})
	f.WaitClusterAvailable(t, ns, cluster, 3, 4*time.Minute)
	framework.PutDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, cluster)), prefix, 0, written)
	hourAgo := time.Now().UTC().Add(-time.Hour)
	daily := fmt.Sprintf("%d %d * * *", hourAgo.Minute(), hourAgo.Hour())
	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: schedule},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: daily,
			TimeZone: ptr.To("UTC"),
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: cluster},
				StorageType:  bucket.Type,
				BackupSource: bucket.Source(cluster+"/"+schedule, secret),
			}},
		},
	})
	t.Logf("1. cluster %s/%s Available with 3 members, %d keys under %s; schedule %s (%q UTC) to S3 bucket %s",
		ns, cluster, written, prefix, schedule, daily, bucket.Name)

	// 2. status -o json: three members main-0..2, all healthy, exactly one the leader, and
	// Available. The members' details come from the operator's passes, so the first report
	// that has all three and a leader is the one checked.
	var st statusJSON
	framework.Eventually(t, time.Minute, "kubectl etcd status with 3 members and a leader", func(ctx context.Context) (bool, error) {
		r := plugin(ctx, 30*time.Second, "status", cluster, "-o", "json")
		if r.code != 0 {
			return false, r.failure()
		}
		st = statusJSON{}
		if err := json.Unmarshal([]byte(r.out), &st); err != nil {
			return false, fmt.Errorf("%s: %w: %s", r.line, err, r.out)
		}
		return len(st.Members) == 3 && st.Leader != "", fmt.Errorf("%d members, leader %q", len(st.Members), st.Leader)
	})
	var names, leaders []string
	for _, m := range st.Members {
		names = append(names, m.Name)
		if m.Leader {
			leaders = append(leaders, m.Name)
		}
		if !m.Healthy {
			t.Errorf("status: member %s is not healthy (role %q)", m.Name, m.Role)
		}
	}
	slices.Sort(names)
	if want := []string{cluster + "-0", cluster + "-1", cluster + "-2"}; !slices.Equal(names, want) {
		t.Errorf("status: members %v, want %v", names, want)
	}
	if len(leaders) != 1 || leaders[0] != st.Leader {
		t.Errorf("status: members marked leader %v, status leader %q: want exactly that one", leaders, st.Leader)
	}
	available := slices.IndexFunc(st.Conditions, func(c conditionJSON) bool { return c.Type == etcdv1beta2.ClusterConditionAvailable })
	if available < 0 || st.Conditions[available].Status != metav1.ConditionTrue {
		t.Fatalf("status: conditions %+v, want Available=True", st.Conditions)
	}
	if st.Namespace != ns || st.Cluster != cluster {
		t.Errorf("status: cluster %s/%s, want %s/%s", st.Namespace, st.Cluster, ns, cluster)
	}
	t.Logf("2. status: members %v, leader %s, Available=%s (%s), cluster ID %s", names, st.Leader, st.Conditions[available].Status, st.Conditions[available].Reason, st.ClusterID)

	// 3. backup now --wait -o json: the backup the plugin created from the schedule's template,
	// followed to Completed, with where it is and what it holds.
	r := plugin(ctx, 6*time.Minute, "backup", "now", cluster, "--schedule", schedule, "--wait", "--timeout", "5m", "-o", "json")
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	var backup backupJSON
	r.decode(t, &backup)
	bs := &backup.Status
	if backup.Kind != "EtcdBackup" || backup.Metadata.Name == "" || bs.Phase != string(etcdv1beta2.BackupPhaseCompleted) || bs.Location == "" || bs.Size <= 0 || bs.SHA256 == "" {
		t.Fatalf("%s printed kind %q name %q, status %+v: want a Completed EtcdBackup with a location, a size and a sha256", r.line, backup.Kind, backup.Metadata.Name, *bs)
	}
	if !strings.HasPrefix(bs.Location, fmt.Sprintf("%s://%s/%s/", etcdv1beta2.BackupStorageTypeS3, bucket.Name, cluster)) {
		t.Errorf("backup location %s, want it under the schedule's path in bucket %s", bs.Location, bucket.Name)
	}
	t.Logf("3. backup now: %s %s at %s, %d bytes, revision %d", backup.Metadata.Name, bs.Phase, bs.Location, bs.Size, bs.EtcdRevision)

	// 4. backups -o json: the object in the bucket, under the schedule's path, attributed to the
	// cluster (this namespace and name, its etcd cluster ID).
	r = plugin(ctx, 2*time.Minute, "backups", cluster, "--schedule", schedule, "-o", "json")
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	var list backupListJSON
	r.decode(t, &list)
	key := keyOf(bs.Location)
	i := slices.IndexFunc(list.Backups, func(b backupObjectJSON) bool { return b.Key == key })
	if i < 0 {
		t.Fatalf("%s lists %d objects under %s, none with the backup's key %s: %+v", r.line, len(list.Backups), list.Location, key, list.Backups)
	}
	listed := list.Backups[i]
	if listed.Match != "this" || listed.Owner == nil || listed.Owner.Namespace != ns || listed.Owner.Cluster != cluster {
		t.Fatalf("%s: key %s match %q owner %+v, want this cluster's (%s/%s)", r.line, key, listed.Match, listed.Owner, ns, cluster)
	}
	if !sameClusterID(listed.Owner.ClusterID, st.ClusterID) {
		t.Errorf("%s: key %s names etcd cluster ID %s, status says %s", r.line, key, listed.Owner.ClusterID, st.ClusterID)
	}
	if listed.Size != bs.Size || listed.Revision != bs.EtcdRevision {
		t.Errorf("%s: key %s has size %d revision %d, the EtcdBackup %d and %d", r.line, key, listed.Size, listed.Revision, bs.Size, bs.EtcdRevision)
	}
	t.Logf("4. backups: %d objects under %s; %s match %s, owner %s/%s", len(list.Backups), list.Location, key, listed.Match, listed.Owner.Namespace, listed.Owner.Cluster)

	// 5. snapshot download: the whole object, as status.size and status.sha256 say.
	file := filepath.Join(tmp, "main.db")
	r = plugin(ctx, 2*time.Minute, "snapshot", "download", backup.Metadata.Name, "-o", file)
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s exited 0: %v", r.line, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != bs.Size || hex.EncodeToString(sum[:]) != bs.SHA256 {
		t.Fatalf("%s wrote %d bytes, sha256 %x; the EtcdBackup says %d bytes, sha256 %s", r.line, len(data), sum, bs.Size, bs.SHA256)
	}
	t.Logf("5. snapshot download: %d bytes = status.size, sha256 = status.sha256 (%s)", len(data), strings.TrimSpace(r.out))

	// 6. drill now. The backup above is not the schedule's (it records none from backup now), so
	// drill now refuses and creates nothing; one run of the schedule's own, then the drill of it
	// passes.
	r = plugin(ctx, time.Minute, "drill", "now", cluster, "--schedule", schedule, "-o", "json")
	if r.code != 1 || !strings.Contains(r.err, "has no successful backup yet") {
		t.Fatalf("%s with only a backup now backup: exit %d, stderr %q; want 1, no successful backup yet", r.line, r.code, r.err)
	}
	var restores etcdv1beta2.EtcdRestoreList
	if err := f.Client.List(ctx, &restores, client.InNamespace(ns)); err != nil || len(restores.Items) != 0 {
		t.Fatalf("after the refused drill: %d EtcdRestores (err %v), want none", len(restores.Items), err)
	}
	s := scheduleRun(t, f, ns, schedule)
	r = plugin(ctx, 16*time.Minute, "drill", "now", cluster, "--schedule", schedule, "--timeout", "15m", "-o", "json")
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	var drill drillJSON
	r.decode(t, &drill)
	if !drill.Passed || drill.Restore == "" || drill.Backup != s.Status.LastSuccessfulLocation {
		t.Fatalf("%s printed %+v: want passed, restoring the schedule's newest backup %s", r.line, drill, s.Status.LastSuccessfulLocation)
	}
	t.Logf("6. drill now: refused with only the backup now backup; after the schedule's run %s, drill %s passed: %s, %d keys verified, time to restore %s",
		s.Status.LastSuccessfulBackup, drill.Restore, drill.Backup, drill.Keys, drill.TimeToRestore)

	// 7. restore --into: a new cluster from the schedule's newest backup, serving every key with
	// its value.
	r = plugin(ctx, 16*time.Minute, "restore", cluster, "--schedule", schedule, "--into", into, "--yes", "--wait", "--timeout", "15m", "-o", "json")
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	var restore restoreJSON
	r.decode(t, &restore)
	rst := &restore.Status
	if restore.Kind != "EtcdRestore" || rst.Phase != string(etcdv1beta2.RestorePhaseSucceeded) || restore.Spec.EtcdCluster.Name != into || rst.BackupLocation != s.Status.LastSuccessfulLocation {
		t.Fatalf("%s printed kind %q, cluster %q, status %+v: want a Succeeded EtcdRestore into %s of %s", r.line, restore.Kind, restore.Spec.EtcdCluster.Name, *rst, into, s.Status.LastSuccessfulLocation)
	}
	if n, diffs := framework.CheckDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, into)), prefix, written); len(diffs) > 0 {
		t.Fatalf("cluster %s holds %d keys under %s, differences from the %d written: %v", into, n, prefix, written, diffs)
	}
	t.Logf("7. restore: %s %s into %s from %s at revision %d; %s serves all %d keys with their values",
		restore.Metadata.Name, rst.Phase, into, rst.BackupLocation, rst.RestoredRevision, into, written)

	// 8. defrag -o json: the request handled, every member defragmented in its round.
	r = plugin(ctx, 6*time.Minute, "defrag", cluster, "--timeout", "5m", "-o", "json")
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	var defrag defragJSON
	r.decode(t, &defrag)
	requested, err := time.Parse(time.RFC3339Nano, defrag.RequestedAt)
	if err != nil || !defrag.Requested || !defrag.Handled || len(defrag.Members) != 3 {
		t.Fatalf("%s printed requested %t at %q (%v), handled %t, %d members: want a handled request and 3 members", r.line, defrag.Requested, defrag.RequestedAt, err, defrag.Handled, len(defrag.Members))
	}
	var done []string
	for _, m := range defrag.Members {
		// status keeps seconds; a few more for the clocks of the host and the operator
		if !m.DefragmentedInRound || m.LastDefragmentationTime == nil || m.LastDefragmentationTime.Before(requested.Add(-5*time.Second)) {
			t.Errorf("%s: member %s defragmented in the round %t, last defragmented %v; want it defragmented since the request at %s", r.line, m.Name, m.DefragmentedInRound, m.LastDefragmentationTime, defrag.RequestedAt)
			continue
		}
		done = append(done, m.Name)
	}
	t.Logf("8. defrag: request %s handled; defragmented %v", defrag.RequestedAt, done)

	// 9. report: a tar.gz holding the cluster's object and the Secret's name, and nothing of its
	// data.
	bundle := filepath.Join(tmp, "report.tar.gz")
	r = plugin(ctx, 3*time.Minute, "report", cluster, "-f", bundle)
	if r.code != 0 {
		t.Fatal(r.failure())
	}
	files := readTarGz(t, bundle)
	var clusters struct {
		Items []objectJSON `json:"items"`
	}
	if err := yaml.Unmarshal(files["etcdclusters.yaml"], &clusters); err != nil {
		t.Fatalf("report: etcdclusters.yaml: %v", err)
	}
	if !slices.ContainsFunc(clusters.Items, func(o objectJSON) bool {
		return o.Kind == "EtcdCluster" && o.Metadata.Namespace == ns && o.Metadata.Name == cluster
	}) {
		t.Errorf("report: etcdclusters.yaml does not hold EtcdCluster %s/%s: %s", ns, cluster, files["etcdclusters.yaml"])
	}
	if names := strings.Fields(string(files["secret-names.txt"])); !slices.Contains(names, secret) {
		t.Errorf("report: secret-names.txt lists %v, want the schedule's Secret %s among them", names, secret)
	}
	needles := map[string]string{"the S3 secret key": secretKey}
	for k, v := range bucket.SecretData() {
		needles["Secret data "+k+" as base64"] = base64.StdEncoding.EncodeToString(v)
	}
	var searched int
	for name, data := range files {
		searched += len(data)
		for what, needle := range needles {
			if bytes.Contains(data, []byte(needle)) {
				t.Errorf("report: %s contains %s", name, what)
			}
		}
	}
	t.Logf("9. report: %d files, %d bytes searched: EtcdCluster %s/%s there, Secret %s named, no secret value", len(files), searched, ns, cluster, secret)

	// 10. version.
	r = plugin(ctx, 10*time.Second, "version")
	if v := strings.TrimSpace(r.out); r.code != 0 || !strings.HasPrefix(v, "kubectl-etcd ") {
		t.Fatalf("%s: exit %d, stdout %q, stderr %q", r.line, r.code, r.out, r.err)
	}
	t.Logf("10. version: %s", strings.TrimSpace(r.out))

	// 11. The screen a user sees after all that (docs/kubectl-etcd.md shows it from a run):
	// the newest backup, the drill and the members, from the real cluster.
	r = plugin(ctx, 30*time.Second, "status", cluster)
	if r.code != 0 || !strings.Contains(r.out, " "+ns+"/"+cluster+"\n") || !strings.Contains(r.out, "PASSED") {
		t.Fatalf("%s: exit %d, want the cluster's screen with its passed drill:\n%s%s", r.line, r.code, r.out, r.err)
	}
	t.Logf("11. status:\n%s", r.out)
}

// result is one run of the plugin.
type result struct {
	line     string // the command, without the global flags
	code     int
	out, err string
}

func (r result) failure() error {
	return fmt.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", r.line, r.code, r.out, r.err)
}

// decode parses the run's stdout (an -o json object) into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.out), v); err != nil {
		t.Fatalf("%s: stdout is not the JSON expected: %v\n%s", r.line, err, r.out)
	}
}

// The parts of the plugin's -o json output the test reads (internal/kubectletcd: statusReport,
// an EtcdBackup, backupList, DrillResult, an EtcdRestore, defragReport).
type (
	statusJSON struct {
		Namespace  string          `json:"namespace"`
		Cluster    string          `json:"cluster"`
		Leader     string          `json:"leader"`
		ClusterID  string          `json:"clusterID"`
		Conditions []conditionJSON `json:"conditions"`
		Members    []struct {
			Name    string `json:"name"`
			Role    string `json:"role"`
			Leader  bool   `json:"leader"`
			Healthy bool   `json:"healthy"`
		} `json:"members"`
	}
	conditionJSON struct {
		Type   string                 `json:"type"`
		Status metav1.ConditionStatus `json:"status"`
		Reason string                 `json:"reason"`
	}
	backupJSON struct {
		Kind     string       `json:"kind"`
		Metadata metadataJSON `json:"metadata"`
		Status   struct {
			Phase        string `json:"phase"`
			Location     string `json:"location"`
			Size         int64  `json:"size"`
			SHA256       string `json:"sha256"`
			EtcdRevision int64  `json:"etcdRevision"`
		} `json:"status"`
	}
	metadataJSON struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	objectJSON struct {
		Kind     string       `json:"kind"`
		Metadata metadataJSON `json:"metadata"`
	}
	backupListJSON struct {
		Location string             `json:"location"`
		Backups  []backupObjectJSON `json:"backups"`
	}
	backupObjectJSON struct {
		Key      string `json:"key"`
		Size     int64  `json:"size"`
		Match    string `json:"match"`
		Revision int64  `json:"revision"`
		Owner    *struct {
			Namespace string `json:"namespace"`
			Cluster   string `json:"cluster"`
			ClusterID string `json:"clusterID"`
		} `json:"owner"`
	}
	drillJSON struct {
		Restore       string `json:"restore"`
		Backup        string `json:"backup"`
		Passed        bool   `json:"passed"`
		Reason        string `json:"reason"`
		TimeToRestore string `json:"timeToRestore"`
		Keys          int64  `json:"keys"`
	}
	restoreJSON struct {
		Kind     string       `json:"kind"`
		Metadata metadataJSON `json:"metadata"`
		Spec     struct {
			EtcdCluster struct {
				Name string `json:"name"`
			} `json:"etcdCluster"`
		} `json:"spec"`
		Status struct {
			Phase            string `json:"phase"`
			Reason           string `json:"reason"`
			BackupLocation   string `json:"backupLocation"`
			RestoredRevision int64  `json:"restoredRevision"`
		} `json:"status"`
	}
	defragJSON struct {
		Requested   bool   `json:"requested"`
		RequestedAt string `json:"requestedAt"`
		Handled     bool   `json:"handled"`
		Members     []struct {
			Name                    string     `json:"name"`
			DefragmentedInRound     bool       `json:"defragmentedInRound"`
			LastDefragmentationTime *time.Time `json:"lastDefragmentationTime"`
		} `json:"members"`
	}
)

// scheduleRun gives EtcdBackupSchedule ns/name one successful run of its own: every minute until
// status.lastSuccessfulBackup names one, then suspended with no backup running, so that its
// newest backup stays the one returned.
func scheduleRun(t *testing.T, f *framework.Framework, ns, name string) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	s := &etcdv1beta2.EtcdBackupSchedule{}
	edit := func(change func(*etcdv1beta2.EtcdBackupSchedule)) {
		t.Helper()
		if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(s.DeepCopy())
		change(s)
		if err := f.Client.Patch(t.Context(), s, patch); err != nil {
			t.Fatalf("patching EtcdBackupSchedule %s/%s: %v", ns, name, err)
		}
	}
	edit(func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Schedule = "*/1 * * * *" })
	framework.Eventually(t, 4*time.Minute, "a successful run of schedule "+name, func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err
		}
		return s.Status.LastSuccessfulBackup != "", fmt.Errorf("lastSuccessfulBackup %q, active %v", s.Status.LastSuccessfulBackup, s.Status.Active)
	})
	edit(func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(true) })
	framework.Eventually(t, 3*time.Minute, "schedule "+name+" suspended with no backup running", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionReady)
		return c != nil && c.Reason == etcdv1beta2.ReasonScheduleSuspended && len(s.Status.Active) == 0 && s.Status.LastSuccessfulLocation != "",
			fmt.Errorf("Ready %+v, active %v", c, s.Status.Active)
	})
	return s
}

// s3SecretKey is aws_secret_access_key of the bucket's credentials Secret.
func s3SecretKey(t *testing.T, b *framework.Bucket) string {
	t.Helper()
	creds := string(b.SecretData()[etcdv1beta2.AWSSecretCredentialsFileName])
	for line := range strings.Lines(creds) {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "aws_secret_access_key" && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no aws_secret_access_key in the bucket's credentials Secret")
	return ""
}

// keyOf is the key of a status location <type>://<bucket>/<key>.
func keyOf(location string) string {
	_, rest, _ := strings.Cut(location, "://")
	_, key, _ := strings.Cut(rest, "/")
	return key
}

// sameClusterID compares etcd cluster IDs in hex, with or without leading zeros.
func sameClusterID(a, b string) bool {
	x, errA := strconv.ParseUint(a, 16, 64)
	y, errB := strconv.ParseUint(b, 16, 64)
	return errA == nil && errB == nil && x == y
}

// readTarGz returns the regular files of a tar.gz by their path under its top directory.
func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatalf("report: %s is not gzip: %v", path, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report: reading %s: %v", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("report: reading %s in %s: %v", hdr.Name, path, err)
		}
		_, name, _ := strings.Cut(hdr.Name, "/")
		files[name] = data
	}
	if len(files) == 0 {
		t.Fatalf("report: %s holds no files", path)
	}
	return files
}
