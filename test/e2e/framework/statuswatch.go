//go:build e2e

package framework

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// StatusWatch looks at an EtcdCluster every PollInterval until Finish: the CA rotation steps it
// went through (status.TLS.caRotation, each change once) and the looks at which it was not
// Available.
type StatusWatch struct {
	stop, done  chan struct{}
	mu          sync.Mutex
	steps       []etcdv1beta2.CARotationStep
	unavailable []string
}

// WatchClusterStatus starts a StatusWatch of EtcdCluster ns/name (bounded: 20 min).
func (f *Framework) WatchClusterStatus(ns, name string) *StatusWatch {
	w := &StatusWatch{stop: make(chan struct{}), done: make(chan struct{}), steps: []etcdv1beta2.CARotationStep{""}}
	go func() {
		defer close(w.done)
		for i := 0; i < 2400; i++ { // bounded: 2400 x 500 ms
			select {
			case <-w.stop:
				return
			case <-time.After(PollInterval):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c := &etcdv1beta2.EtcdCluster{}
			err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
			cancel()
			if err != nil {
				continue
			}
			w.mu.Lock()
			step := etcdv1beta2.CARotationStep("")
			if c.Status.TLS != nil {
				step = c.Status.TLS.CARotation
			}
			if step != w.steps[len(w.steps)-1] {
				w.steps = append(w.steps, step)
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) {
				w.unavailable = append(w.unavailable, time.Now().Format(time.TimeOnly)+" "+conditionString(c, etcdv1beta2.ClusterConditionAvailable))
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// Finish stops the watch and returns the steps seen and the looks that were not Available.
func (w *StatusWatch) Finish() ([]etcdv1beta2.CARotationStep, []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps, w.unavailable
}

// conditionString is "<status>/<reason>" of c's condition typ, "-" when it has none.
func conditionString(c *etcdv1beta2.EtcdCluster, typ string) string {
	cond := meta.FindStatusCondition(c.Status.Conditions, typ)
	if cond == nil {
		return "-"
	}
	return string(cond.Status) + "/" + cond.Reason
}
