//go:build e2e && upgrade

package upgrade

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// monitorInterval is how often the monitor looks: every pass is a handful of API reads.
const monitorInterval = time.Second

// monitor watches, from before the upgrade until stopped, what must not change while the
// upgraded operators take over: every volume of the namespace is kept (the in-flight restore's
// retained volumes only until that restore succeeded), the finished restore stays as it
// finished, and its cluster keeps its member pods and stays Available.
type monitor struct {
	f  *framework.Framework
	ns string
	// volumes are every PersistentVolumeClaim of the namespace before the upgrade.
	volumes map[string]types.UID
	// retained are the volumes the in-flight restore retains from the cluster it replaced.
	retained map[string]bool
	// inflight is the in-flight EtcdRestore; done the finished one, as it finished.
	inflight string
	done     *etcdv1beta2.EtcdRestore
	// donePods are the finished restore's cluster's member pods before the upgrade.
	donePods map[string]types.UID

	start time.Time
	stop  context.CancelFunc
	ended chan struct{}

	mu sync.Mutex
	// problems are the first sighting of each broken rule, in order.
	problems []string
	seen     map[string]bool
	// passes counts the passes that read everything; retainedSeen the passes that found every
	// retained volume there while the in-flight restore had not succeeded; readErrors the
	// passes an API error cut short.
	passes, retainedSeen, readErrors int
}

// run starts the monitor; Stop ends it and returns what it found.
func (m *monitor) run() {
	ctx, cancel := context.WithCancel(context.Background())
	m.start, m.stop, m.ended, m.seen = time.Now(), cancel, make(chan struct{}), map[string]bool{}
	go func() {
		defer close(m.ended)
		tick := time.NewTicker(monitorInterval)
		defer tick.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
			err := m.pass(pctx)
			pcancel()
			m.mu.Lock()
			if err != nil && ctx.Err() == nil {
				m.readErrors++
			}
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// Stop ends the monitor and returns the broken rules and the pass counts.
func (m *monitor) Stop() (problems []string, passes, retainedSeen, readErrors int) {
	m.stop()
	<-m.ended
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.problems, m.passes, m.retainedSeen, m.readErrors
}

func (m *monitor) report(key, format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[key] {
		return
	}
	m.seen[key] = true
	m.problems = append(m.problems, fmt.Sprintf("[%.1fs after the upgrade began] ", time.Since(m.start).Seconds())+fmt.Sprintf(format, args...))
}

// pass reads the volumes first and the in-flight restore after them: a volume missing while
// the restore, read later, still has not succeeded was deleted before it succeeded.
func (m *monitor) pass(ctx context.Context) error {
	pvcs, err := volumes(ctx, m.f, m.ns, "")
	if err != nil {
		return err
	}
	pods, err := memberPods(ctx, m.f, m.ns, m.done.Spec.EtcdCluster.Name)
	if err != nil {
		return err
	}
	inflight, err := m.f.GetRestore(ctx, m.ns, m.inflight)
	if err != nil {
		return err
	}
	done, err := m.f.GetRestore(ctx, m.ns, m.done.Name)
	if err != nil {
		return err
	}
	cluster, err := m.f.GetCluster(ctx, m.ns, m.done.Spec.EtcdCluster.Name)
	if err != nil {
		return err
	}

	now := map[string]bool{}
	for _, pvc := range pvcs {
		if pvc.UID == m.volumes[pvc.Name] && pvc.DeletionTimestamp == nil {
			now[pvc.Name] = true
		}
	}
	allRetained := true
	for name := range m.volumes {
		switch {
		case now[name]:
		case !m.retained[name]:
			m.report("volume "+name, "PersistentVolumeClaim %s (UID %s) was deleted or is being deleted", name, m.volumes[name])
		case !inflight.Status.Succeeded:
			allRetained = false
			m.report("volume "+name, "PersistentVolumeClaim %s, retained by EtcdRestore %s, was deleted or is being deleted before the restore succeeded (phase %s)", name, m.inflight, inflight.Status.Phase)
		}
	}

	live := map[string]types.UID{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live[p.Name] = p.UID
		}
	}
	for name, uid := range m.donePods {
		if live[name] != uid {
			m.report("pod "+name, "member pod %s of EtcdCluster %s (UID %s) was deleted or replaced: now UID %q", name, cluster.Name, uid, live[name])
		}
	}
	if !done.Status.Succeeded || done.Status.Phase != etcdv1beta2.RestorePhaseSucceeded || !done.Status.CompletionTime.Equal(m.done.Status.CompletionTime) {
		m.report("restore "+done.Name, "the finished EtcdRestore %s changed: phase %s, succeeded %t, completionTime %v (was %v)",
			done.Name, done.Status.Phase, done.Status.Succeeded, done.Status.CompletionTime, m.done.Status.CompletionTime)
	}
	if !meta.IsStatusConditionTrue(cluster.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) {
		m.report("available "+cluster.Name, "EtcdCluster %s left Available: phase %s, ready %v, unready %v", cluster.Name, cluster.Status.Phase, cluster.Status.Members.Ready, cluster.Status.Members.Unready)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes++
	if allRetained && !inflight.Status.Succeeded {
		m.retainedSeen++
	}
	return nil
}
