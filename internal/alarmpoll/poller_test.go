package alarmpoll

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// cluster is an EtcdCluster named name in ns with the given conditions.
func cluster(ns, name string, conds ...metav1.Condition) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Status:     etcdv1beta2.ClusterStatus{Conditions: conds},
	}
}

var available = metav1.Condition{Type: etcdv1beta2.ClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "t"}

// memberPod is member pod name of c, controlled by owner, running, its etcd started or not.
func memberPod(c, owner *etcdv1beta2.EtcdCluster, name string, started bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: member.SelectorLabels(c)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: member.ContainerName, Started: ptr.To(started)}}},
	}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
		Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	return p
}

// TestWorthAsking: only an Available cluster the operator acts on, whose status names no alarm
// yet, is asked.
func TestWorthAsking(t *testing.T) {
	paused := cluster("ns", "c", available)
	paused.Spec.Paused = true
	deleting := cluster("ns", "c", available)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name string
		c    *etcdv1beta2.EtcdCluster
		want bool
	}{
		{"available", cluster("ns", "c", available), true},
		{"not available", cluster("ns", "c"), false},
		{"paused", paused, false},
		{"deleting", deleting, false},
		{"degraded otherwise", cluster("ns", "c", available,
			metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonQuorumLost}), true},
		{"NOSPACE reported", cluster("ns", "c", available,
			metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonNoSpace}), false},
		{"quota exceeded reported", cluster("ns", "c", available,
			metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonQuotaExceeded}), false},
		{"alarm reported", cluster("ns", "c", available,
			metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonAlarmRaised}), false},
	} {
		if got := worthAsking(tc.c); got != tc.want {
			t.Errorf("%s: worthAsking %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPoll: one poll asks a started member of the cluster's own (not a foreign pod, not one whose
// etcd has not started), of Available clusters only, and wakes exactly the clusters whose
// member names an alarm.
func TestPoll(t *testing.T) {
	alarmed, quiet, down, unready := cluster("a", "c", available), cluster("b", "c", available), cluster("c", "c", available), cluster("d", "c")
	stranger := cluster("a", "x")
	objs := []client.Object{alarmed, quiet, down, unready,
		memberPod(alarmed, stranger, "c-0", true), // foreign: not asked
		memberPod(alarmed, alarmed, "c-1", false), // etcd not started: not asked
		memberPod(alarmed, alarmed, "c-2", true),
		memberPod(quiet, quiet, "c-0", true),
		memberPod(unready, unready, "c-0", true),
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1beta2.SchemeBuilder.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	var mu sync.Mutex
	var asked []string
	p := New(reader, func(_ context.Context, baseURL string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, baseURL)
		if baseURL == "http://"+member.Host(alarmed, "c-2")+":2381" {
			return "ALARM NOSPACE", nil
		}
		return "", nil
	})
	p.poll(t.Context())

	slices.Sort(asked)
	want := []string{"http://" + member.Host(alarmed, "c-2") + ":2381", "http://" + member.Host(quiet, "c-0") + ":2381"}
	slices.Sort(want)
	if !slices.Equal(asked, want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	var woken []string
	for len(p.Events()) > 0 {
		ev := <-p.Events()
		woken = append(woken, client.ObjectKeyFromObject(ev.Object).String())
	}
	if !slices.Equal(woken, []string{"a/c"}) {
		t.Fatalf("woken %v, want [a/c]", woken)
	}
}
