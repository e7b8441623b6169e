package integration

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sizes of TestMemoryDoesNotGrowWithUnrelatedObjects.
const (
	// unrelatedPods is how many Pods of other applications the cluster gets, each with a PVC and
	// every tenth with a Service: a realistic proxy of a busy cluster's objects.
	unrelatedPods = 2000
	// maxRSSGrowth is how much the operators' resident memory may grow with them.
	maxRSSGrowth = 0.10
)

// TestMemoryDoesNotGrowWithUnrelatedObjects (issue 14 item 10): the etcd operator and the restore
// operator, which watch Pods, PVCs and Services cluster-wide, cache only etcd's (label app=etcd)
// and no managedFields, so 2,000 unrelated Pods with their PVCs and 200 Services change their
// resident memory by less than 10%.
//
// It runs beside TestNoHotLoops; its operators leave that test's namespaces alone, as two
// operators on one EtcdCluster would race (and count each other's status writes as reconciles).
func TestMemoryDoesNotGrowWithUnrelatedObjects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exclude := "--exclude-namespace=" + strings.Join(slices.Sorted(maps.Values(hotLoopNamespaces(memoryRuns.Add(1)))), ",")
	ops := map[string]*operator{}
	for _, b := range []string{"etcd-operator", "restore-operator"} {
		ops[b] = startOperator(t, b, kubeconfig, exclude)
	}
	before := map[string]int64{}
	for b, op := range ops {
		before[b] = settledRSS(t, op.pid)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unrelated-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < unrelatedPods; i += 8 {
				for _, o := range unrelatedObjects(ns.Name, i) {
					if err := env.Client.Create(ctx, o); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("created %d unrelated pods with their PVCs and %d Services in %s", unrelatedPods, unrelatedPods/10, time.Since(start).Round(time.Second))

	for b, op := range ops {
		after := settledRSS(t, op.pid)
		growth := float64(after-before[b]) / float64(before[b])
		t.Logf("%s: RSS %.1f MiB before, %.1f MiB after (%+.1f%%)", b, mib(before[b]), mib(after), 100*growth)
		if growth > maxRSSGrowth {
			t.Errorf("%s: RSS grew by %.1f%% with unrelated objects, want less than %.0f%%", b, 100*growth, 100*maxRSSGrowth)
		}
	}
}

// unrelatedObjects is the i-th application pod of another team, its PVC, and for every tenth a
// Service: labels, annotations, env, probes and resources as real workloads have them.
func unrelatedObjects(ns string, i int) []client.Object {
	name := fmt.Sprintf("web-%d", i)
	labels := map[string]string{"app": "web", "team": "shop", "pod-template-hash": "5d8f7c9b6", "instance": name}
	env := make([]corev1.EnvVar, 0, 12)
	for j := range 12 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: strings.Repeat("v", 40)})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: map[string]string{
			"checksum/config": strings.Repeat("a", 64), "prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-11-24T00:00:00Z"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/shop/web:1.2.3", Env: env,
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	objs := []client.Object{pod, pvc}
	if i%10 == 0 {
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			// Headless: 200 cluster IPs a round would fill envtest's Service range by the
			// second round of `go test -count=N` ("failed to allocate a serviceIP").
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}})
	}
	return objs
}

// settledRSS is the median of five readings of pid's resident memory, one second apart, after
// the process had ten seconds to list and watch what it caches.
func settledRSS(t *testing.T, pid int) int64 {
	t.Helper()
	time.Sleep(10 * time.Second) //nolint:forbidigo // memory settles after the informers' lists: there is no event to wait for
	var samples []int64
	for range 5 {
		samples = append(samples, rss(t, pid))
		time.Sleep(time.Second) //nolint:forbidigo // spacing of the samples
	}
	slices.Sort(samples)
	return samples[len(samples)/2]
}

// rss reads VmRSS of pid in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
