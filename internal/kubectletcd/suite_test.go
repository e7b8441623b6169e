package kubectletcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The plugin runs against a real kube-apiserver (envtest) through a kubeconfig file, as a user
// runs it; no operator runs, so the tests write the statuses the operators would.
var (
	k8s        client.Client
	kubeconfig string
)

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	env, err := testutil.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "kubectl-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if kubeconfig, err = env.KubeconfigFile(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s = env.Client
	return m.Run()
}

// result is what one run of the plugin printed and returned.
type result struct {
	out, err string
	code     int
}

// run runs the plugin with args in namespace ns at the clock now.
func run(ctx context.Context, now time.Time, ns string, args ...string) result {
	return runIn(ctx, now, ns, "", args...)
}

// runIn is run with in as what the user types.
func runIn(ctx context.Context, now time.Time, ns, in string, args ...string) result {
	var out, errOut bytes.Buffer
	a := New(strings.NewReader(in), &out, &errOut)
	a.Now = func() time.Time { return now }
	a.Interval = 20 * time.Millisecond
	code := a.Run(ctx, append(args, "--kubeconfig", kubeconfig, "-n", ns))
	return result{out: out.String(), err: errOut.String(), code: code}
}

// start runs the plugin like run, in the background, for a test that plays an operator while
// the command follows an object; wait returns the result once the command returned, failing
// the test when it has not within testutil.Timeout.
func start(t *testing.T, now time.Time, ns string, args ...string) (wait func() result) {
	done := make(chan result, 1)
	go func() { done <- run(t.Context(), now, ns, args...) }()
	return func() result {
		t.Helper()
		select {
		case r := <-done:
			t.Log("\n" + r.out + r.err)
			return r
		case <-time.After(testutil.Timeout):
			t.Fatalf("kubectl etcd %s did not return", strings.Join(args, " "))
			return result{}
		}
	}
}

// newCluster creates EtcdCluster ns/name and writes status through the status subresource.
func newCluster(t *testing.T, ns, name string, status etcdv1beta2.ClusterStatus) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16"}}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c.Status = status
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatalf("writing the status of %s: %v", name, err)
	}
	return c
}

// newSchedule creates a schedule of cluster with the given storage, and writes its status.
func newSchedule(t *testing.T, ns, name, cluster string, typ etcdv1beta2.BackupStorageType, src etcdv1beta2.BackupSource, status etcdv1beta2.BackupScheduleStatus) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	s := &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "0 */6 * * *",
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{
				Metadata: etcdv1beta2.BackupTemplateMetadata{Labels: map[string]string{"team": "db"}},
				Spec: etcdv1beta2.BackupSpec{
					EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: cluster},
					StorageType:  typ,
					BackupSource: src,
				},
			},
		},
	}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	s.Status = status
	if err := k8s.Status().Update(t.Context(), s); err != nil {
		t.Fatalf("writing the status of schedule %s: %v", name, err)
	}
	return s
}

// s3Source is a storage block that no test reaches (status and backup now never open it).
func s3Source(path string) etcdv1beta2.BackupSource {
	return etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: path, AWSSecret: "aws"}}
}

// mustContain fails the test for each want that out lacks, comparing with runs of spaces (the
// table padding) as one space.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(squash(out), squash(w)) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// squash replaces each run of spaces in s by one space.
func squash(s string) string { return spaces.ReplaceAllString(s, " ") }

var spaces = regexp.MustCompile(` +`)

// line returns the line of out that contains s, or "".
func line(out, s string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// decode parses what a command printed with -o format (json or yaml) into v, refusing fields v
// lacks.
func decode(format, out string, v any) error {
	if format == "yaml" {
		return yaml.UnmarshalStrict([]byte(out), v)
	}
	d := json.NewDecoder(strings.NewReader(out))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// ago is now - d as an API time.
func ago(now time.Time, d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
