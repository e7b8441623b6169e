package etcdcluster

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

var (
	k8s client.Client
	// reconciler is the suite's EtcdCluster reconciler (tests reach its in-memory clocks).
	reconciler *Reconciler
	fakes      sync.Map // namespace -> *fakeEtcd
	// failAfterAdd, when set, makes the next after-member-add failpoint abort the pass (a
	// panic the controller recovers from: the process-exit of production, without the exit).
	failAfterAdd atomic.Bool
	failpointHit atomic.Int32
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	return testutil.RunManagerSuite(m, func(ctx context.Context, env *testutil.Env, mgr ctrl.Manager) error {
		k8s = env.Client
		r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("etcd-operator"), Options: options.New("etcd-operator"),
			NewEtcdClient: func(cfg cluster.Config) (cluster.Client, error) { return fakeFor(cfg).connect(cfg) },
			AlarmProbe:    fakeAlarmProbe,
			AgentImage:    "localhost/etcd-operator:test",
			RestoreCheck:  fakeRestoreCheck,
			SelectRetry:   2 * time.Second,
			StuckAfter:    time.Second,
			Failpoint: func(name string) {
				if name == FailpointAfterMemberAdd && failAfterAdd.CompareAndSwap(true, false) {
					failpointHit.Add(1)
					panic("failpoint " + name)
				}
			}}
		reconciler = r
		go fakeKubelet(ctx)
		return r.SetupWithManager(mgr)
	})
}

// fakeFor returns the fake etcd of the namespace the endpoints are in (<pod>.<c>.<ns>.svc).
func fakeFor(cfg cluster.Config) *fakeEtcd {
	ns := ""
	if len(cfg.Endpoints) > 0 {
		if parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoints[0], "https://"), "http://"), "."); len(parts) > 2 {
			ns = parts[2]
		}
	}
	f, _ := fakes.LoadOrStore(ns, newFakeEtcd())
	return f.(*fakeEtcd)
}

// fakeKubelet marks every pod Running with its etcd container started (envtest has no kubelet),
// and the pod of a killed member
// not Ready, as a kubelet's readiness probe would: that pod event is how the operator hears of
// a dead member before its steady re-check a minute later.
func fakeKubelet(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.HasLabels{"etcd_cluster"}); err != nil {
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if strings.HasPrefix(p.Namespace, "nokubelet-") {
				continue
			}
			notReady := false
			if f, ok := fakes.Load(p.Namespace); ok && f.(*fakeEtcd).isDead(p.Name) {
				notReady = !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
					return c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse
				})
			}
			// In "nostart-" namespaces the pods run but the test says when etcd has started.
			started := strings.HasPrefix(p.Namespace, "nostart-") || etcdStarted(p)
			if p.Status.Phase != corev1.PodRunning || !started || notReady {
				p.Status.Phase = corev1.PodRunning
				if !started {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.ContainerName, Image: p.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true)}}
				}
				if notReady {
					p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "EtcdKilled"})
				}
				_ = k8s.Status().Update(ctx, p)
			}
		}
	}
}

func namespace(t *testing.T, base string) string {
	t.Helper()
	return testutil.Namespace(t, k8s, base)
}

func newCluster(ns, name string, size int32) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1beta2.ClusterSpec{Size: size}}
}

func getCluster(t *testing.T, ns, name string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := &etcdv1beta2.EtcdCluster{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func condition(c *etcdv1beta2.EtcdCluster, typ string) string {
	cond := meta.FindStatusCondition(c.Status.Conditions, typ)
	if cond == nil {
		return "<none>"
	}
	return string(cond.Status) + "/" + cond.Reason
}

func podNames(t *testing.T, ns string) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func memberNames(f *fakeEtcd, votersOnly bool) []string {
	var out []string
	for _, m := range f.list() {
		if !votersOnly || (!m.IsLearner && m.Started()) {
			out = append(out, m.PodName())
		}
	}
	slices.Sort(out)
	return out
}

func clusterConfig(ns string) cluster.Config {
	return cluster.Config{Endpoints: []string{"http://c-0.c." + ns + ".svc:2379"}}
}
