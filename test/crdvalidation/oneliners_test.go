package crdvalidation

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// testedMarker precedes each documented command block that TestDocumentedOneLiners runs.
const testedMarker = "<!-- tested: test/crdvalidation/oneliners_test.go runs this block as it is -->"

// documentedBlocks returns the ```sh blocks that follow the marker in docs/<name>.
func documentedBlocks(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(data), testedMarker)[1:] {
		part = strings.TrimLeft(part, "\n")
		body, ok := strings.CutPrefix(part, "```sh\n")
		end := strings.Index(body, "\n```")
		if !ok || end < 0 {
			t.Fatalf("docs/%s: the block after the marker is not a ```sh block", name)
		}
		blocks = append(blocks, body[:end+1])
	}
	return blocks
}

// TestDocumentedOneLiners runs the "back up now" block of docs/backups.md and the "restore the
// newest backup" block of docs/restore.md exactly as written, with the built kubectl, against
// the apiserver with the generated CRDs (the test sets Ready on what they create, as the
// operators would, so their kubectl wait returns). The backup must be admitted and be one of
// the schedule's backups with the template's spec; the restore must name the cluster and the
// schedule.
func TestDocumentedOneLiners(t *testing.T) {
	backupNow, restoreNewest := documentedBlocks(t, "backups.md"), documentedBlocks(t, "restore.md")
	if len(backupNow) != 1 || len(restoreNewest) != 1 {
		t.Fatalf("tested blocks: %d in backups.md, %d in restore.md; want one each", len(backupNow), len(restoreNewest))
	}
	ns := newNamespace(t)
	createAll(t, ns, coreosCluster, exampleSchedule)
	k := newKubectl(t, ns)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go markReady(ctx, ns, &etcdv1beta2.EtcdBackupList{}, &etcdv1beta2.EtcdRestoreList{})

	k.shell(t, backupNow[0])
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "example-nightly"}, s); err != nil {
		t.Fatal(err)
	}
	backups := &etcdv1beta2.EtcdBackupList{}
	if err := env.Client.List(t.Context(), backups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(backups.Items) != 1 {
		t.Fatalf("%d EtcdBackups after the back-up-now block, want 1", len(backups.Items))
	}
	b := backups.Items[0]
	want := s.Spec.BackupTemplate.Spec.DeepCopy()
	want.PathType = etcdv1beta2.BackupPathPrefix
	if !strings.HasPrefix(b.Name, "example-nightly-manual-") || !metav1.IsControlledBy(&b, s) ||
		b.Labels["etcd.database.coreos.com/backup-schedule"] != "example-nightly" {
		t.Errorf("backup %s: owners %+v labels %v; want a generated name, controlled by and labelled with the schedule", b.Name, b.OwnerReferences, b.Labels)
	}
	if !reflect.DeepEqual(&b.Spec, want) {
		t.Errorf("backup spec %+v, want the template's with pathType Prefix %+v", b.Spec, *want)
	}

	out := k.shell(t, restoreNewest[0])
	restores := &etcdv1beta2.EtcdRestoreList{}
	if err := env.Client.List(t.Context(), restores, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(restores.Items) != 1 {
		t.Fatalf("%d EtcdRestores after the restore-newest block, want 1", len(restores.Items))
	}
	rs := restores.Items[0]
	if !strings.HasPrefix(rs.Name, "example-etcd-cluster-restore-") || rs.Spec.EtcdCluster.Name != "example-etcd-cluster" ||
		rs.Spec.BackupScheduleRef == nil || rs.Spec.BackupScheduleRef.Name != "example-nightly" || rs.Spec.ClusterTemplate != nil {
		t.Errorf("restore %s spec %+v; want an in-place restore of example-etcd-cluster from schedule example-nightly", rs.Name, rs.Spec)
	}
	if column(out, "CLUSTER") != "example-etcd-cluster" || column(out, "READY") != "True" {
		t.Errorf("the block's kubectl get printed\n%s\nwant the cluster and Ready True", out)
	}
}
