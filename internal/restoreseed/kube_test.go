package restoreseed

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	"github.com/etcd-operator/etcd-operator/internal/testutil/keyspace"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRestoreKubeAPIServerKeyspace: the keyspace a real kube-apiserver writes (300 ConfigMaps,
// 50 Events on the API server's event lease, its own endpoint lease and bootstrap objects) is
// restored by the agent and served by etcd on the restored data exactly as the source served it
// at the backup's revision, key by key, leases included.
func TestRestoreKubeAPIServerKeyspace(t *testing.T) {
	snapshottest.Bin(t, "etcd")
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("ev-%02d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "apps", Name: "cm-000"}, Reason: "Written", Type: corev1.EventTypeNormal}
		if err := env.Client.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 { // deleted keys too
		if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("cm-%03d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{env.EtcdURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	evs, err := cli.Get(ctx, "/registry/events/apps/", clientv3.WithPrefix())
	if err != nil || len(evs.Kvs) != 50 || evs.Kvs[0].Lease == 0 {
		t.Fatalf("events: %v, %d keys; want 50 on a lease", err, len(evs.Kvs))
	}
	restoreAndCompare(t, snapshottest.BinDir(), &keyspace.Source{Endpoint: env.EtcdURL(), Client: cli})
}
