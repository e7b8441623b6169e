//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// dataset is the demo's keyspace: n keys shaped like a real etcd's (Kubernetes objects under
// /registry/..., application records, sessions), values 16 B to 4 KiB, log-uniform so that most
// are small and a few are large, as in a Kubernetes etcd. Key i's value is a function of (seed, i)
// only, so verification regenerates it instead of holding 40 MB in memory. Keys from index n on
// are the "trickle": /app/events/..., written continuously from after the load until the
// disaster, some of them after the backup. The sessions (every fifth key) are attached to
// leases, as Kubernetes events, locks and service registries are: a restore must bring back
// each key on its lease.
type dataset struct {
	seed uint64
	n    int
	// leases are the sessions' leases (granted by load, an hour each).
	leases []clientv3.LeaseID
	// rev[i] is the revision of the transaction that wrote key i; 0 = not written.
	rev []int64
	mu  sync.Mutex // guards rev beyond n (the trickle appends)
}

const (
	minValue = 16
	maxValue = 4096
	// sessionLeases is how many leases the sessions share; leaseTTL their TTL in seconds, far
	// beyond the demo (a restored lease starts a full TTL again: docs/restore.md).
	sessionLeases = 16
	leaseTTL      = 3600
)

// lease is the lease key i is attached to, or 0.
func (d *dataset) lease(i int) clientv3.LeaseID {
	if i >= d.n || i%5 != 4 || len(d.leases) == 0 {
		return 0
	}
	return d.leases[i%len(d.leases)]
}

func newDataset(seed uint64, n int) *dataset {
	return &dataset{seed: seed, n: n, rev: make([]int64, n)}
}

var kinds = []string{"pods", "configmaps", "secrets", "services/endpoints", "leases"}

// key returns key i.
func (d *dataset) key(i int) string {
	if i >= d.n {
		return fmt.Sprintf("/app/events/%08d", i-d.n)
	}
	switch i % 5 {
	case 0, 1, 2:
		return fmt.Sprintf("/registry/%s/ns-%03d/obj-%06d", kinds[(i/5)%len(kinds)], i%97, i)
	case 3:
		return fmt.Sprintf("/app/users/%08d", i)
	default:
		return fmt.Sprintf("/app/sessions/%016x", rand.New(rand.NewPCG(d.seed, uint64(i))).Uint64())
	}
}

// value returns key i's value: a JSON-ish header padded with printable bytes to a size drawn
// log-uniformly from [minValue, maxValue].
func (d *dataset) value(i int) []byte {
	r := rand.New(rand.NewPCG(d.seed^0x9e3779b97f4a7c15, uint64(i)))
	size := max(minValue, int(math.Exp(math.Log(minValue)+r.Float64()*(math.Log(maxValue)-math.Log(minValue)))))
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"i":%d,"seed":%d,"data":"`, i, d.seed%1000)
	for b.Len() < size-2 {
		b.WriteByte(byte('a' + r.IntN(26)))
	}
	b.WriteString(`"}`)
	return b.Bytes()[:size]
}

// revision is rev[i] under the lock.
func (d *dataset) revision(i int) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.rev) {
		return 0
	}
	return d.rev[i]
}

func (d *dataset) setRevision(from, to int, rev int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.rev) < to {
		d.rev = append(d.rev, 0)
	}
	for i := from; i < to; i++ {
		d.rev[i] = rev
	}
}

// after counts the keys written after revision backup, and those of them at or before the
// restored revision cut (they came back through the continuous capture).
func (d *dataset) after(backup, cut int64) (written, back int) {
	for i := range d.total() {
		if rev := d.revision(i); rev > backup {
			written++
			if rev <= cut {
				back++
			}
		}
	}
	return written, back
}

func (d *dataset) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.rev)
}

// put writes keys [from, to) in one transaction and records its revision.
func (d *dataset) put(ctx context.Context, cli *clientv3.Client, from, to int) error {
	ops := make([]clientv3.Op, 0, to-from)
	for i := from; i < to; i++ {
		var opts []clientv3.OpOption
		if l := d.lease(i); l != 0 {
			opts = append(opts, clientv3.WithLease(l))
		}
		ops = append(ops, clientv3.OpPut(d.key(i), string(d.value(i)), opts...))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("writing keys %d..%d: %w", from, to-1, err)
	}
	d.setRevision(from, to, resp.Header.Revision)
	return nil
}

// load writes the n dataset keys, batch keys per transaction (etcd's --max-txn-ops is 128),
// workers transactions in flight. It returns the bytes written (keys and values).
func (d *dataset) load(ctx context.Context, cli *clientv3.Client, batch, workers int) (int64, error) {
	for range sessionLeases {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := cli.Grant(gctx, leaseTTL)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("granting the sessions' leases: %w", err)
		}
		d.leases = append(d.leases, l.ID)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(int64(batch))) - batch
				if from >= d.n {
					return
				}
				if err := d.put(ctx, cli, from, min(from+batch, d.n)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	var bytes int64
	for i := range d.n {
		bytes += int64(len(d.key(i)) + len(d.value(i)))
	}
	return bytes, nil
}

// trickle writes `per` new keys every interval until ctx ends: the application that keeps
// writing while backups are taken. It returns the first write error, if any.
func (d *dataset) trickle(ctx context.Context, cli *clientv3.Client, per int, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		from := d.total()
		if err := d.put(context.WithoutCancel(ctx), cli, from, from+per); err != nil {
			return err
		}
	}
}

// verification is the result of comparing a restored cluster with the dataset.
type verification struct {
	Expected   int   // keys written at or before the backup's revision
	Lost       int   // keys written after it: expected absent
	Checked    int   // expected keys found and compared
	Mismatches int   // expected keys found with another value or on another lease
	Leased     int   // expected keys checked on their lease
	Missing    int   // expected keys absent
	Survivors  int   // keys written after the backup's revision that are present anyway
	Unknown    int   // keys in the cluster the demo never wrote
	Revision   int64 // the restored cluster's revision at the read
	Examples   []string
}

func (v *verification) ok() bool {
	return v.Mismatches == 0 && v.Missing == 0 && v.Survivors == 0 && v.Unknown == 0 && v.Checked == v.Expected
}

func (v *verification) example(format string, args ...any) {
	if len(v.Examples) < 5 {
		v.Examples = append(v.Examples, fmt.Sprintf(format, args...))
	}
}

// verify reads the whole keyspace of the restored cluster, a page at a time, and compares it
// with every key written: those at or before backupRev must be there with their values, those
// after it must not.
func (d *dataset) verify(ctx context.Context, cli *clientv3.Client, backupRev int64) (*verification, error) {
	v := &verification{}
	index := make(map[string]int, d.total())
	for i := range d.total() {
		rev := d.revision(i)
		switch {
		case rev == 0:
			continue
		case rev <= backupRev:
			v.Expected++
		default:
			v.Lost++
		}
		index[d.key(i)] = i
	}
	key, rev := "\x00", int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithLimit(2000)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev)) // one consistent view across pages
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cli.Get(cctx, key, opts...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading the restored keyspace from %q: %w", key, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			i, ok := index[k]
			switch {
			case !ok:
				v.Unknown++
				v.example("unknown key %s", k)
			case d.revision(i) > backupRev:
				v.Survivors++
				v.example("key %s written at revision %d > backup revision %d is present", k, d.revision(i), backupRev)
			case !bytes.Equal(kv.Value, d.value(i)):
				v.Mismatches++
				v.Checked++
				v.example("key %s: %d-byte value differs from the %d bytes written", k, len(kv.Value), len(d.value(i)))
			case clientv3.LeaseID(kv.Lease) != d.lease(i):
				v.Mismatches++
				v.Checked++
				v.example("key %s: on lease %x, written on lease %x", k, kv.Lease, d.lease(i))
			default:
				v.Checked++
				if kv.Lease != 0 {
					v.Leased++
				}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	v.Revision = rev
	v.Missing = v.Expected - v.Checked
	if v.Missing > 0 {
		v.example("%d keys written at or before revision %d are missing", v.Missing, backupRev)
	}
	return v, nil
}
