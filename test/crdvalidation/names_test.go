package crdvalidation

import (
	"context"
	"slices"
	"strings"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// exampleSchedule is docs/quickstart.md's schedule, with more of the template set so that a
// copy of it can be checked field by field.
const exampleSchedule = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackupSchedule
metadata:
  name: example-nightly
spec:
  schedule: "30 2 * * *"
  timeZone: UTC
  backupTemplate:
    metadata:
      labels: {team: storage}
    spec:
      etcdCluster: {name: example-etcd-cluster}
      storageType: S3
      backupPolicy: {timeoutInSecond: 600}
      s3:
        path: mybucket/nightly/etcd.backup
        awsSecret: aws
        endpoint: http://minio.minio:9000
        forcePathStyle: true
  retention:
    maxBackups: 14
`

// clusterBackup is docs/quickstart.md's one-shot backup, which names the EtcdCluster.
const clusterBackup = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata:
  name: example-etcd-cluster-backup
spec:
  etcdCluster:
    name: example-etcd-cluster
  storageType: S3
  s3:
    path: mybucket/etcd.backup
    awsSecret: aws
`

// createAll creates the manifests in ns through the typed-agnostic path a user's YAML takes.
func createAll(t *testing.T, ns string, manifests ...string) {
	t.Helper()
	for _, m := range manifests {
		if err := env.Client.Create(t.Context(), parse(t, m, ns)); err != nil {
			t.Fatalf("creating %s: %v", m, err)
		}
	}
}

// TestKubectlNamesAndColumns runs the built kubectl against the apiserver with the generated
// CRDs: `kubectl get etcd NAME` finds the cluster (the short name no longer collides with a
// category), `kubectl get etcd-operator` lists all four kinds, the printer columns show Ready
// (and the cluster and the reason on backups and restores), and `kubectl wait
// --for=condition=Ready` works on each kind.
func TestKubectlNamesAndColumns(t *testing.T) {
	ns := newNamespace(t)
	createAll(t, ns, coreosCluster, clusterBackup, coreosRestoreS3, exampleSchedule)
	k := newKubectl(t, ns)

	out := k.must(t, "get", "etcd", "example-etcd-cluster")
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(header, []string{"NAME", "SIZE", "MEMBERS", "VERSION", "LEADER", "OUTDATED", "READY", "PHASE", "AGE"}) {
		t.Errorf("kubectl get etcd NAME: columns %v\n%s", header, out)
	}
	for _, short := range []string{"etcdcluster", "etcdbackup", "etcdbk", "etcdbackupschedule", "etcdbks", "etcdrestore"} {
		k.must(t, "get", short)
	}

	names := strings.Fields(k.must(t, "get", "etcd-operator", "-o", "name"))
	slices.Sort(names)
	want := []string{
		"etcdbackup.etcd.database.coreos.com/example-etcd-cluster-backup",
		"etcdbackupschedule.etcd.database.coreos.com/example-nightly",
		"etcdcluster.etcd.database.coreos.com/example-etcd-cluster",
		"etcdrestore.etcd.database.coreos.com/example-etcd-cluster",
	}
	if !slices.Equal(names, want) {
		t.Errorf("kubectl get etcd-operator -o name = %v, want %v", names, want)
	}

	for kind, cols := range map[string][]string{
		"etcdbackup":         {"NAME", "CLUSTER", "STORAGE", "READY", "PHASE", "REASON"},
		"etcdrestore":        {"NAME", "CLUSTER", "READY", "PHASE", "REASON"},
		"etcdbackupschedule": {"NAME", "SCHEDULE", "SUSPEND", "READY", "FRESH"},
	} {
		header := strings.Fields(strings.SplitN(k.must(t, "get", kind), "\n", 2)[0])
		if !slices.Equal(header[:len(cols)], cols) {
			t.Errorf("kubectl get %s: columns %v, want them to start with %v", kind, header, cols)
		}
	}

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go markReady(ctx, ns, &etcdv1beta2.EtcdClusterList{}, &etcdv1beta2.EtcdBackupList{}, &etcdv1beta2.EtcdBackupScheduleList{}, &etcdv1beta2.EtcdRestoreList{})
	for _, obj := range []string{"etcd/example-etcd-cluster", "etcdbackup/example-etcd-cluster-backup", "etcdbackupschedule/example-nightly", "etcdrestore/example-etcd-cluster"} {
		k.must(t, "wait", "--for=condition=Ready", obj, "--timeout=30s")
	}
	for _, kind := range []string{"etcdbackup/example-etcd-cluster-backup", "etcdrestore/example-etcd-cluster"} {
		out := k.must(t, "get", kind)
		if got := []string{column(out, "CLUSTER"), column(out, "READY"), column(out, "REASON")}; !slices.Equal(got, []string{"example-etcd-cluster", "True", "Test"}) {
			t.Errorf("kubectl get %s: cluster, ready, reason = %q, want the cluster, True and the Ready reason\n%s", kind, got, out)
		}
	}
}

// column is the value under the header name in the first row of kubectl's table output.
func column(table, name string) string {
	lines := strings.Split(table, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "NAME ") })
	if i < 0 || i+1 >= len(lines) {
		return ""
	}
	header, row := lines[i], lines[i+1]
	start := strings.Index(header, name)
	if start < 0 || start >= len(row) {
		return ""
	}
	end := len(header)
	if next := strings.IndexFunc(header[start+len(name):], func(r rune) bool { return r != ' ' }); next >= 0 {
		end = start + len(name) + next
	}
	return strings.TrimSpace(row[start:min(end, len(row))])
}
