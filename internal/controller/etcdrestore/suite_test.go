package etcdrestore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

var (
	k8s     client.Client
	members = &fakeMembers{states: map[string]restoreboot.MemberState{}}
)

// fakeMembers stands in for etcd members: envtest runs no pods. Keyed by the member's host.
type fakeMembers struct {
	mu     sync.Mutex
	states map[string]restoreboot.MemberState
}

func (f *fakeMembers) set(host string, st restoreboot.MemberState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[host] = st
}

func (f *fakeMembers) check(_ context.Context, endpoint, _ string, _ etcdaccess.Access, _ int64) (restoreboot.MemberState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	host := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	host, _, _ = strings.Cut(host, ":")
	st, ok := f.states[host]
	if !ok {
		return restoreboot.MemberState{}, fmt.Errorf("no member at %s", endpoint)
	}
	return st, nil
}

// TestMain starts envtest and a manager running the real EtcdRestore controller with fake
// member checks.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunManagerSuite(m, func(ctx context.Context, env *testutil.Env, mgr ctrl.Manager) error {
		k8s = env.Client
		opts := options.New("restore-operator")
		r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts, AgentImage: "etcd-operator:test", Check: members.check, StuckAfter: time.Second}
		go etcdOperatorVolumes(ctx, env.Client)
		return r.SetupWithManager(mgr)
	}))
}

// holdMembers holds the namespaces in which etcdOperatorVolumes does not stop the members of a
// cluster marked replaced (an etcd operator that has not got to it yet).
var holdMembers sync.Map

// etcdOperatorVolumes plays the etcd operator's part of an in-place restore, with its own code
// (internal/restoreboot): the volumes of a cluster marked replaced are retained and, on
// volumes, its members stopped (unless holdMembers), those of a cluster marked verified are
// released, and the stuck pods of a deleted replaced cluster are force-deleted on request. The tests play the rest of the etcd operator by hand.
func etcdOperatorVolumes(ctx context.Context, c client.Client) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		list := &etcdv1beta2.EtcdClusterList{}
		if err := c.List(ctx, list); err != nil {
			continue
		}
		for i := range list.Items {
			cl := &list.Items[i]
			_, _ = restoreboot.RetainVolumes(ctx, c, c, cl)
			if _, _, replacing := restoreboot.Replacing(cl); replacing && cl.Spec.Pod != nil && cl.Spec.Pod.PersistentVolumeClaimSpec != nil {
				if _, held := holdMembers.Load(cl.Namespace); !held {
					_, _ = restoreboot.StopMembers(ctx, c, c, cl)
				}
			}
			_, _ = restoreboot.ReleaseVolumes(ctx, c, c, cl)
			if cl.DeletionTimestamp != nil {
				pods := &corev1.PodList{}
				if err := c.List(ctx, pods, client.InNamespace(cl.Namespace)); err == nil {
					_, _, _ = restoreboot.ForceDeleteStuck(ctx, c, cl, pods.Items, time.Now(), time.Second)
				}
			}
		}
	}
}

func namespace(t *testing.T) string {
	t.Helper()
	return testutil.Namespace(t, k8s, "restore")
}

func getRestore(t *testing.T, ns, name string) *etcdv1beta2.EtcdRestore {
	t.Helper()
	rs := &etcdv1beta2.EtcdRestore{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// waitCondition waits until the restore's condition typ has status/reason.
func waitCondition(t *testing.T, ns, name, typ, want string) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var rs *etcdv1beta2.EtcdRestore
	testutil.Eventually(t, testutil.Timeout, name+" "+typ+"="+want, func() (bool, string) {
		rs = getRestore(t, ns, name)
		c := meta.FindStatusCondition(rs.Status.Conditions, typ)
		if c == nil {
			return false, fmt.Sprintf("phase %s, conditions %v", rs.Status.Phase, rs.Status.Conditions)
		}
		got := string(c.Status) + "/" + c.Reason
		return got == want, got + ": " + c.Message
	})
	return rs
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

func getCluster(t *testing.T, ns, name string) (*etcdv1beta2.EtcdCluster, error) {
	c := &etcdv1beta2.EtcdCluster{}
	return c, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, c)
}

func secret(ns, name string, data map[string][]byte) *corev1.Secret {
	s := &corev1.Secret{Data: data}
	s.Namespace, s.Name = ns, name
	return s
}

// waitProgress waits until the restore's Complete condition (its progress) says want.
func waitProgress(t *testing.T, ns, name, want string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, name+" progress: "+want, func() (bool, string) {
		c := meta.FindStatusCondition(getRestore(t, ns, name).Status.Conditions, etcdv1beta2.RestoreConditionComplete)
		if c == nil {
			return false, "no progress yet"
		}
		return strings.Contains(c.Message, want), c.Message
	})
}

// pastDeadline moves restore name's start back by twice its deadline: its next pass times out.
func pastDeadline(t *testing.T, ns, name string) {
	t.Helper()
	rs := getRestore(t, ns, name)
	patch := client.MergeFrom(rs.DeepCopy())
	long := metav1.NewTime(time.Now().Add(-2 * restoreTimeout(rs.Status.BackupSize)))
	rs.Status.StartTime = &long
	if err := k8s.Status().Patch(t.Context(), rs, patch); err != nil {
		t.Fatal(err)
	}
}
