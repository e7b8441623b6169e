package kubectletcd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// secretValue is the credential the test plants in a Secret, env values, annotations and logs;
// it must appear nowhere in the bundle, in clear or base64.
const secretValue = "hunter2-s3cr3t"

// TestReport: the bundle holds the cluster, its member pods, PVCs and Services, its schedule,
// backup and restore, the events about them, and the operators' pods and logs (of a container
// that restarted, its log before the restart too), and nothing of another cluster; no Secret
// and no credential value is in it (the Secret's name is), whether planted in a Secret, an
// etcdEnv or pod env value, an annotation, the last-applied configuration, a URL or a log line.
func TestReport(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "report")
	ops := testutil.Namespace(t, k8s, "report-ops")
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	create := func(o client.Object) {
		t.Helper()
		if err := k8s.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-auth"}, StringData: map[string]string{"password": secretValue}})
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main", Annotations: map[string]string{
			"example.com/db-password": secretValue,
			lastApplied:               `{"spec":{"pod":{"etcdEnv":[{"name":"MY_API_TOKEN","value":"` + secretValue + `"}]}}}`,
			"example.com/owner":       "team-db",
		}},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16", Auth: &etcdv1beta2.AuthPolicy{SecretName: "etcd-auth"},
			Pod: &etcdv1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "MY_API_TOKEN", Value: secretValue}, {Name: "ETCD_LOG_LEVEL", Value: "debug"}}}},
	}
	create(c)
	newCluster(t, ns, "other", etcdv1beta2.ClusterStatus{})
	pod := func(ns, name string, labels map[string]string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd", Env: env,
				Args: []string{"--initial-cluster-token=" + secretValue, "--listen-client-urls=https://root:" + secretValue + "@0.0.0.0:2379"}}}}}
	}
	create(pod(ns, "main-0", map[string]string{"app": "etcd", "etcd_cluster": "main"},
		corev1.EnvVar{Name: "AWS_SECRET_ACCESS_KEY", Value: secretValue}, corev1.EnvVar{Name: "ETCD_NAME", Value: "main-0"}))
	create(pod(ns, "other-0", map[string]string{"app": "etcd", "etcd_cluster": "other"}))
	create(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-data-main-0", Labels: map[string]string{"app": "etcd", "etcd_cluster": "main"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-client", Labels: map[string]string{"app": "etcd", "etcd_cluster": "main"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}})
	newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{})
	newBackup(t, ns, "nightly-1", "main", etcdv1beta2.BackupPhaseCompleted)
	newBackup(t, ns, "other-1", "other", etcdv1beta2.BackupPhaseCompleted)
	create(&etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-restore-1"},
		Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "main"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "nightly-1"}}})
	event := func(kind, name, msg string) {
		create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name}, Reason: "Test", Message: msg, Type: corev1.EventTypeNormal,
			FirstTimestamp: metav1.Time{Time: now}, LastTimestamp: metav1.Time{Time: now}, Source: corev1.EventSource{Component: "test"}})
	}
	event("Pod", "main-0", "Started container etcd")
	event("EtcdCluster", "main", "Defragmented member main-1 with password="+secretValue)
	event("Pod", "other-0", "an event of another cluster")
	op := pod(ops, "etcd-operator-abc", map[string]string{"app.kubernetes.io/name": "etcd-operator", "app.kubernetes.io/part-of": "etcd-operator"})
	create(op)
	op.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Image: "etcd", RestartCount: 2}}
	if err := k8s.Status().Update(t.Context(), op); err != nil {
		t.Fatal(err)
	}
	create(pod(ops, "unrelated", map[string]string{"app.kubernetes.io/part-of": "something-else"}))

	logs := func(_ context.Context, ns, pod, container string, tail int64, previous bool) (io.ReadCloser, error) {
		if pod != "etcd-operator-abc" {
			return nil, errors.New("unexpected pod " + pod)
		}
		if previous {
			return io.NopCloser(strings.NewReader(`panic: AWS_SECRET_ACCESS_KEY=` + secretValue + "\n")), nil
		}
		return io.NopCloser(strings.NewReader(`{"msg":"Reconciled","etcdcluster":"main"}` + "\n" +
			`{"msg":"dialing","endpoint":"https://root:` + secretValue + `@main-0:2379","password":"` + secretValue + `"}` + "\n")), nil
	}
	file := filepath.Join(t.TempDir(), "bundle.tar.gz")
	var out, errOut bytes.Buffer
	a := New(strings.NewReader(""), &out, &errOut)
	a.Now = func() time.Time { return now }
	a.PodLogs = logs
	code := a.Run(t.Context(), []string{"report", "main", "-f", file, "--kubeconfig", kubeconfig, "-n", ns})
	t.Log("\n" + out.String() + errOut.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}

	files := readTarGz(t, file)
	for name, data := range files {
		for _, leak := range []string{secretValue, "aHVudGVyMi1zM2NyM3Q"} {
			if strings.Contains(data, leak) {
				t.Errorf("%s holds the credential %q:\n%s", name, leak, data)
			}
		}
		if strings.Contains(data, "kind: Secret") {
			t.Errorf("%s holds a Secret", name)
		}
	}
	want := map[string][]string{
		"README.txt":               {"Support bundle of EtcdCluster " + ns + "/main", "no Secret is read or included"},
		"secret-names.txt":         {"aws", "etcd-auth"},
		"etcdclusters.yaml":        {"name: main", "example.com/owner: team-db", "example.com/db-password: REDACTED", lastApplied + ": REDACTED", "name: MY_API_TOKEN\n          value: REDACTED", "value: debug"},
		"pods.yaml":                {"name: main-0", "name: AWS_SECRET_ACCESS_KEY\n      value: REDACTED", "value: main-0", "--initial-cluster-token=REDACTED", "https://root:REDACTED@0.0.0.0:2379"},
		"pvcs.yaml":                {"name: etcd-data-main-0"},
		"services.yaml":            {"name: main-client"},
		"etcdbackupschedules.yaml": {"name: nightly"},
		"etcdbackups.yaml":         {"name: nightly-1"},
		"etcdrestores.yaml":        {"name: main-restore-1"},
		"events.yaml":              {"Started container etcd", "Defragmented member main-1 with password=REDACTED"},
		"operators/pods.yaml":      {"name: etcd-operator-abc"},
		fmt.Sprintf("operators/logs/%s_etcd-operator-abc_etcd.log", ops):          {`"msg":"Reconciled"`, "https://root:REDACTED@main-0:2379", `"password":"REDACTED"`},
		fmt.Sprintf("operators/logs/%s_etcd-operator-abc_etcd.previous.log", ops): {"panic: AWS_SECRET_ACCESS_KEY=REDACTED"},
	}
	for name, wants := range want {
		data, ok := files[name]
		if !ok {
			t.Errorf("the bundle lacks %s (has %v)", name, keys(files))
			continue
		}
		mustContain(t, data, wants...)
		mustContain(t, out.String(), name)
	}
	for name, not := range map[string]string{"etcdclusters.yaml": "name: other", "pods.yaml": "other-0", "etcdbackups.yaml": "other-1", "events.yaml": "another cluster", "operators/pods.yaml": "unrelated"} {
		if strings.Contains(files[name], not) {
			t.Errorf("%s holds %q, of another cluster or not an operator", name, not)
		}
	}
}

// TestScrub: credentials in free text are replaced, and what names a Secret or a reason stays.
func TestScrub(t *testing.T) {
	for in, want := range map[string]string{
		"password=abc def":                     "password=REDACTED def",
		`{"token": "abc"}`:                     `{"token": "REDACTED"}`,
		"AWS_SECRET_ACCESS_KEY=abc":            "AWS_SECRET_ACCESS_KEY=REDACTED",
		"s3://key:sec@minio:9000/b":            "s3://key:REDACTED@minio:9000/b",
		"Authorization: Bearer eyJhbGciOi.x.y": "Authorization: Bearer REDACTED",
		"id AKIAIOSFODNN7EXAMPLE":              "id REDACTED",
		"SecretNotFound: secret aws not found": "SecretNotFound: secret aws not found",
		"secretName: aws":                      "secretName: aws",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": "REDACTED",
	} {
		if got := scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// readTarGz returns the files of a tar.gz by their path under its top directory.
func readTarGz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		_, name, _ := strings.Cut(h.Name, "/")
		files[name] = string(data)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
