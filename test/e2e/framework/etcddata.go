//go:build e2e

package framework

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// EtcdClient connects from the host to etcd endpoints given by cluster DNS names.
func (f *Framework) EtcdClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	return f.EtcdClientAs(t, "", "", endpoints...)
}

// EtcdClientAs is EtcdClient authenticating as an etcd user (none when user is empty).
func (f *Framework) EtcdClientAs(t testing.TB, user, password string, endpoints ...string) *clientv3.Client {
	t.Helper()
	return f.etcdClient(t, user, password, nil, endpoints...)
}

// EtcdClientTLS is EtcdClient over TLS with cfg (https endpoints).
func (f *Framework) EtcdClientTLS(t testing.TB, cfg *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	return f.etcdClient(t, "", "", cfg, endpoints...)
}

func (f *Framework) etcdClient(t testing.TB, user, password string, cfg *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), Username: user, Password: password, TLS: cfg,
		DialOptions:        []grpc.DialOption{grpc.WithContextDialer(f.DialTCP)},
		MaxCallSendMsgSize: 2 << 20, MaxCallRecvMsgSize: 64 << 20,
	})
	if err != nil {
		t.Fatalf("etcd client for %v: %v", endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// ClientEndpoint is the client Service URL of EtcdCluster name in ns (plain http).
func ClientEndpoint(ns, name string) string {
	return fmt.Sprintf("http://%s:2379", ServiceDNSName(name+"-client", ns))
}

// ValueOf is the value PutDataset writes for key number i: 16 bytes to ~4 KiB, derived from i,
// so any key's expected value can be recomputed.
func ValueOf(i int) string {
	size := 16 + (i*7919)%4080
	if i%10 != 0 { // most values are small, as in a real keyspace
		size = 16 + (i*31)%240
	}
	b := make([]byte, size)
	for j := range b {
		b[j] = 'a' + byte((i+j*13)%26)
	}
	return string(b)
}

// DatasetKey is the key number i of a dataset under prefix.
func DatasetKey(prefix string, i int) string { return fmt.Sprintf("%s%08d", prefix, i) }

// PutDataset writes keys [from, to) under prefix with ValueOf values, in transactions of 100
// puts, 8 in flight.
func PutDataset(t testing.TB, cli *clientv3.Client, prefix string, from, to int) {
	t.Helper()
	PutKeys(t, cli, from, to, 100, 8, func(i int) (string, string) { return DatasetKey(prefix, i), ValueOf(i) })
}

// PutKeys writes the keys and values kv returns for i in [from, to), batch puts per
// transaction (etcd's --max-txn-ops defaults to 128; batch 1 makes one revision per key),
// workers transactions in flight.
func PutKeys(t testing.TB, cli *clientv3.Client, from, to, batch, workers int, kv func(i int) (key, value string)) {
	t.Helper()
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(int64(batch))) - batch
				if start >= to {
					return
				}
				ops := make([]clientv3.Op, 0, batch)
				for i := start; i < min(start+batch, to); i++ {
					k, v := kv(i)
					ops = append(ops, clientv3.OpPut(k, v))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cli.Txn(ctx).Then(ops...).Commit()
				cancel()
				if err != nil {
					errs <- fmt.Errorf("txn of keys %d..%d: %w", start, start+len(ops)-1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// EachKV calls fn with every key and value under prefix, in key order, reading pages of 5000.
func EachKV(t testing.TB, cli *clientv3.Client, prefix string, fn func(key, value []byte)) {
	t.Helper()
	key, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(5000))
		cancel()
		if err != nil {
			t.Fatalf("reading keys from %s: %v", key, err)
		}
		for _, kv := range resp.Kvs {
			fn(kv.Key, kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// CheckDataset reads every key under prefix and returns how many there are and a description of
// every difference from keys [0, n) with ValueOf values (at most 10 listed).
func CheckDataset(t testing.TB, cli *clientv3.Client, prefix string, n int) (int, []string) {
	t.Helper()
	var diffs []string
	seen := 0
	EachKV(t, cli, prefix, func(key, value []byte) {
		var i int
		if _, err := fmt.Sscanf(string(key[len(prefix):]), "%08d", &i); err != nil || i >= n || DatasetKey(prefix, i) != string(key) {
			diffs = append(diffs, "unexpected key "+string(key))
		} else if string(value) != ValueOf(i) {
			diffs = append(diffs, fmt.Sprintf("key %s has a %d-byte value that differs", key, len(value)))
		}
		seen++
	})
	if seen != n {
		diffs = append(diffs, fmt.Sprintf("%d keys under %s, want %d", seen, prefix, n))
	}
	if len(diffs) > 10 {
		diffs = append(diffs[:10], fmt.Sprintf("... and %d more", len(diffs)-10))
	}
	return seen, diffs
}

// KeyspaceSHA256 hashes every key and value under prefix in key order.
func KeyspaceSHA256(t testing.TB, cli *clientv3.Client, prefix string) string {
	t.Helper()
	h := sha256.New()
	EachKV(t, cli, prefix, func(key, value []byte) {
		fmt.Fprintf(h, "%d:%s=%d:%s\n", len(key), key, len(value), value)
	})
	return hex.EncodeToString(h.Sum(nil))
}

// GetCluster reads EtcdCluster ns/name.
func (f *Framework) GetCluster(ctx context.Context, ns, name string) (*etcdv1beta2.EtcdCluster, error) {
	c := &etcdv1beta2.EtcdCluster{}
	return c, f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
}

// WaitClusterAvailable waits until EtcdCluster ns/name is Available with size ready members.
func (f *Framework) WaitClusterAvailable(t testing.TB, ns, name string, size int32, timeout time.Duration) *etcdv1beta2.EtcdCluster {
	t.Helper()
	var c *etcdv1beta2.EtcdCluster
	Eventually(t, timeout, fmt.Sprintf("EtcdCluster %s/%s Available with %d members", ns, name, size), func(ctx context.Context) (bool, error) {
		var err error
		if c, err = f.GetCluster(ctx, ns, name); err != nil {
			return false, err
		}
		ok := meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) &&
			c.Status.ReadyMembers == size && len(c.Status.Members.Ready) == int(size) && len(c.Status.Members.Unready) == 0
		return ok, fmt.Errorf("phase %s, ready %v, unready %v", c.Status.Phase, c.Status.Members.Ready, c.Status.Members.Unready)
	})
	return c
}
