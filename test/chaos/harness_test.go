//go:build e2e && chaos

// Package chaos is the fault-injection suite (issue 15): real etcd pods on the local cluster,
// a bounded load through the client Service during every fault, and a checker that every
// acknowledged write survived. Run with hack/chaos.sh (make test-chaos, make test-chaos-smoke).
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Bounds of the load: every loop stops by itself.
const (
	writers        = 3
	maxWritesEach  = 20000
	maxLoadTime    = 8 * time.Minute
	writeTimeout   = 5 * time.Second
	writePause     = 10 * time.Millisecond
	healTimeout    = 5 * time.Minute
	availableAfter = 5 * time.Minute
)

// load writes distinct keys from several writers through the client Service, recording a
// write only when etcd acknowledged it, and reads one key linearizably to check that the
// revisions it sees never go backwards.
type load struct {
	cli       *clientv3.Client
	value     []byte
	stop      chan struct{}
	stopOnce  sync.Once
	wg        sync.WaitGroup
	mu        sync.Mutex
	acked     map[string]string
	ackedRev  map[string]int64     // the revision each acknowledged write got
	ackedAt   map[string]time.Time // when it was acknowledged
	failed    int
	maxRev    int64
	readsBack int // linearizable reads whose revision went backwards
	reads     int
}

func startLoad(cli *clientv3.Client, valueSize int, seed uint64) *load {
	l := &load{cli: cli, value: make([]byte, valueSize), stop: make(chan struct{}), acked: map[string]string{},
		ackedRev: map[string]int64{}, ackedAt: map[string]time.Time{}}
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for i := range l.value {
		l.value[i] = byte('a' + rng.IntN(26)) //nolint:gosec // a letter, 'a'..'z'

	}
	deadline := time.Now().Add(maxLoadTime)
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < maxWritesEach && time.Now().Before(deadline); i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				k := fmt.Sprintf("/chaos/w%d/%07d", w, i)
				v := fmt.Sprintf("%d:%d:", w, i) + string(l.value)
				ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
				resp, err := cli.Put(ctx, k, v)
				cancel()
				l.mu.Lock()
				if err == nil {
					l.acked[k], l.ackedRev[k], l.ackedAt[k] = v, resp.Header.Revision, time.Now()
					l.maxRev = max(l.maxRev, resp.Header.Revision)
				} else {
					l.failed++ // not acknowledged: may or may not be there; never counted
				}
				l.mu.Unlock()
				time.Sleep(writePause) //nolint:forbidigo // pacing of a bounded load generator
			}
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		var last int64
		for time.Now().Before(deadline) {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			resp, err := cli.Get(ctx, "/chaos/w0/0000000")
			cancel()
			if err == nil {
				l.mu.Lock()
				l.reads++
				if resp.Header.Revision < last {
					l.readsBack++
				}
				last = max(last, resp.Header.Revision)
				l.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond) //nolint:forbidigo // pacing of a bounded reader
		}
	}()
	return l
}

// finish stops the load and waits for its goroutines; calling it again does nothing.
func (l *load) finish() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// result is one run's row of the report.
type result struct {
	Kind      string        `json:"kind"`
	Seed      uint64        `json:"seed"`
	Survived  bool          `json:"survived"`
	Acked     int           `json:"acked"`
	Failed    int           `json:"failedWrites"`
	Lost      int           `json:"lost"`
	ReadsBack int           `json:"readsBackwards"`
	Heal      time.Duration `json:"healNanos"`
	Note      string        `json:"note,omitempty"`
}

// chaosDir is $CACHE_DIR/chaos, where hack/chaos.sh reads the results from (CACHE_DIR defaults
// to <repo>/.cache, as in hack/lib.sh).
func chaosDir(f *framework.Framework) string {
	if d := os.Getenv("CACHE_DIR"); d != "" {
		return filepath.Join(d, "chaos")
	}
	return filepath.Join(f.RootDir, ".cache", "chaos")
}

// recordResult appends r to $CACHE_DIR/chaos/results.jsonl for the report.
func recordResult(t *testing.T, r result) {
	dir := chaosDir(framework.Global(t))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("recording the result: %v", err)
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Logf("recording the result: %v", err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	_, _ = f.Write(append(b, '\n'))
}

// check waits until the cluster is Available with size members again and verifies that every
// acknowledged write is on every member with its value, that the member list is exactly the
// member pods, and that reads never went backwards. It returns how many writes were lost.
// mayLose (nil: none) names the writes a kind's fault may lose by design (acknowledged past the
// data of the member a recovery kept): they are counted apart, in lostByDesign, and reads may
// go back in revision when some were.
func check(t *testing.T, f *framework.Framework, ns, name string, size int32, l *load, mayLose func(k string) bool) (lost, lostByDesign int) {
	t.Helper()
	if mayLose == nil {
		mayLose = func(string) bool { return false }
	}
	// The revision every member must reach: that of the last write that must be there.
	var target int64
	for k, rev := range l.ackedRev {
		if !mayLose(k) {
			target = max(target, rev)
		}
	}
	c := f.WaitClusterAvailable(t, ns, name, size, healTimeout)
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	var podNames []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			podNames = append(podNames, p.Name)
		}
	}
	slices.Sort(podNames)
	lostKeys := map[string]bool{}
	for _, pod := range podNames {
		cli := clientOf(t, f, c, framework.PodDNSName(pod, name, ns))
		framework.Eventually(t, 2*time.Minute, pod+" caught up", func(ctx context.Context) (bool, error) {
			resp, err := cli.Get(ctx, "/chaos/", clientv3.WithSerializable(), clientv3.WithCountOnly())
			if err != nil {
				return false, err
			}
			return resp.Header.Revision >= target, fmt.Errorf("at revision %d, last acknowledged write at %d", resp.Header.Revision, target)
		})
		have := map[string]string{}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		resp, err := cli.Get(ctx, "/chaos/", clientv3.WithPrefix(), clientv3.WithSerializable())
		cancel()
		if err != nil {
			t.Fatalf("reading %s: %v", pod, err)
		}
		for _, kv := range resp.Kvs {
			have[string(kv.Key)] = string(kv.Value)
		}
		for k, v := range l.acked {
			switch {
			case have[k] == v:
			case mayLose(k):
				lostKeys[k] = true
			default:
				lost++
				if lost <= 5 {
					t.Errorf("member %s: acknowledged write %s lost", pod, k)
				}
			}
		}
		if pod == podNames[0] {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			ml, err := cli.MemberList(ctx)
			cancel()
			if err != nil {
				t.Fatalf("member list: %v", err)
			}
			var members []string
			for _, m := range ml.Members {
				members = append(members, m.Name)
			}
			slices.Sort(members)
			if !slices.Equal(members, podNames) || len(members) != int(size) {
				t.Errorf("members %v, pods %v, spec.size %d: stray or missing member", members, podNames, size)
			}
		}
	}
	if l.readsBack > 0 && len(lostKeys) == 0 {
		t.Errorf("%d of %d linearizable reads went back in revision", l.readsBack, l.reads)
	}
	return lost, len(lostKeys)
}

// newCluster is a 3-member cluster of the current etcd release.
func newCluster(ns, name string) *etcdv1beta2.EtcdCluster {
	c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	c.Namespace, c.Name = ns, name
	return c
}

// clientOf is a client of cluster c at host: plain, or with TLS.auto one that takes its
// certificate and CAs from the operator's client Secret at each connection (as an application
// following the Secret through a CA rotation does).
func clientOf(t *testing.T, f *framework.Framework, c *etcdv1beta2.EtcdCluster, host string) *clientv3.Client {
	t.Helper()
	if c.Spec.TLS != nil && c.Spec.TLS.Auto != nil {
		return f.EtcdClientTLS(t, f.SecretTLS(c.Namespace, c.Name+etcdv1beta2.AutoTLSOperatorSuffix), "https://"+host+":2379")
	}
	return f.EtcdClient(t, "http://"+host+":2379")
}
