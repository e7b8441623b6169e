package kubectletcd

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// complete runs `kubectl-etcd __complete words...` as kubectl_complete-etcd does and returns
// the candidates and the directive line.
func complete(t *testing.T, words ...string) ([]string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := New(nil, &out, &errOut).Run(t.Context(), append([]string{completeCommand}, words...)); code != 0 {
		t.Fatalf("__complete %q: exit %d, %s", words, code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletion: kubectl's plugin completion (kubectl_complete-etcd) offers the commands, the
// word after a two-word command, each command's own flags, the clusters, schedules and
// backups of the namespace the line names, and output formats; file names only where a file
// goes.
func TestCompletion(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "complete")
	for _, o := range []interface {
		GetName() string
	}{
		&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}},
		&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beta"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}},
	} {
		if err := k8s.Create(t.Context(), o.(*etcdv1beta2.EtcdCluster)); err != nil {
			t.Fatal(err)
		}
	}
	s := &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: etcdv1beta2.BackupScheduleSpec{
		Schedule: "0 3 * * *", BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "alpha"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "b/k", AWSSecret: "aws"}}}}}}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + kubeconfig
	for _, tc := range []struct {
		words     []string
		want      []string
		directive string
	}{
		{[]string{""}, commands, ":4"},
		{[]string{"ba"}, []string{"backup", "backups"}, ":4"},
		{[]string{"backup", ""}, []string{"now"}, ":4"},
		{[]string{kc, "-n", ns, "status", ""}, []string{"alpha", "beta"}, ":4"},
		{[]string{"status", kc, "--namespace", ns, "a"}, []string{"alpha"}, ":4"},
		{[]string{kc, "-n", ns, "status", "alpha", ""}, nil, ":4"},
		{[]string{"backups", "alpha", "--sch"}, []string{"--schedule"}, ":4"},
		{[]string{"restore", "--i"}, []string{"--into"}, ":4"},
		{[]string{kc, "-n", ns, "backups", "alpha", "--schedule", ""}, []string{"nightly"}, ":4"},
		{[]string{"status", "alpha", "-o", ""}, []string{"json", "yaml"}, ":4"},
		{[]string{"report", "alpha", "-f", ""}, nil, ":0"},
		{[]string{"snapshot", "download", "b", "-o", ""}, nil, ":0"},
	} {
		got, directive := complete(t, tc.words...)
		if !slices.Equal(got, tc.want) || directive != tc.directive {
			t.Errorf("complete %q = %q %s, want %q %s", tc.words, got, directive, tc.want, tc.directive)
		}
	}
}
