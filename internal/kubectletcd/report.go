package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// OperatorSelector selects the operators' pods as manifests/deploy and the Helm chart label
// them (app.kubernetes.io/name is the binary).
const OperatorSelector = "app.kubernetes.io/part-of=etcd-operator,app.kubernetes.io/name in (etcd-operator,backup-operator,restore-operator)"

// PodLogs opens the last tailLines lines of a container's log, or of its previous instance's
// (the one that exited before the last restart).
type PodLogs func(ctx context.Context, namespace, pod, container string, tailLines int64, previous bool) (io.ReadCloser, error)

// report writes a support bundle about a cluster: `kubectl etcd report <cluster>`.
func (a *App) report(ctx context.Context, args []string) error {
	fs := a.flagSet("report")
	file := fs.String("file", "", "the .tar.gz to write (default: etcd-report-<namespace>-<cluster>-<UTC time>.tar.gz)")
	fs.StringVar(file, "f", "", "shorthand for --file")
	lines := fs.Int64("log-lines", 5000, "the last this many lines of each operator container's log")
	opNS := fs.String("operator-namespace", "", "the namespace the operators run in (default: all namespaces)")
	pos, err := a.parse(fs, args, 1, "report <cluster>")
	if err != nil {
		return err
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	logs := a.PodLogs
	if logs == nil {
		if logs, err = a.kubeLogs(); err != nil {
			return err
		}
	}
	if *file == "" {
		*file = fmt.Sprintf("etcd-report-%s-%s-%s.tar.gz", r.cluster.Namespace, r.cluster.Name, a.Now().UTC().Format(manualTimeFormat))
	}
	base := filepath.Base(*file)
	b := &bundle{dir: strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".tgz"), ".gz"), ".tar")}
	if err := collect(ctx, c, r, b); err != nil {
		return err
	}
	collectOperators(ctx, c, *opNS, logs, *lines, b)
	b.readme(r.cluster, a.Now())
	if err := b.write(*file); err != nil {
		return err
	}
	b.print(a.Out, *file)
	return nil
}

// kubeLogs reads pod logs through the API server with the user's kubeconfig.
func (a *App) kubeLogs() (PodLogs, error) {
	cfg, _, err := a.kube.config()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	return func(ctx context.Context, ns, pod, container string, tail int64, previous bool) (io.ReadCloser, error) {
		return cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail, Previous: previous}).Stream(ctx)
	}, nil
}

// collect adds the cluster's objects to b: the cluster and the scratch clusters of its
// restores and drills, their pods, PVCs and Services (by the member labels or a controller
// reference, and the restore's own pods), the schedules, backups and restores naming it, the
// events about any of these, and the names of the Secrets they refer to.
func collect(ctx context.Context, c client.Client, r *related, b *bundle) error {
	ns := r.cluster.Namespace
	restores, err := relatedRestores(ctx, c, r)
	if err != nil {
		return err
	}
	clusterNames, restoreNames := map[string]bool{r.cluster.Name: true}, map[string]bool{}
	for _, rs := range restores {
		clusterNames[rs.Spec.EtcdCluster.Name] = true
		restoreNames[rs.Name] = true
	}
	var clusters etcdv1beta2.EtcdClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing EtcdClusters in %s: %w", ns, err)
	}
	var etcds []runtime.Object
	owners := map[types.UID]bool{}
	for i := range clusters.Items {
		if ec := &clusters.Items[i]; clusterNames[ec.Name] {
			etcds = append(etcds, ec)
			owners[ec.UID] = true
		}
	}
	mine := func(o client.Object) bool {
		l := o.GetLabels()
		if l[member.LabelApp] == member.AppEtcd && clusterNames[l[member.LabelCluster]] || restoreNames[l[etcdrestore.LabelRestore]] {
			return true
		}
		ref := metav1.GetControllerOf(o)
		return ref != nil && owners[ref.UID]
	}
	var pods corev1.PodList
	var pvcs corev1.PersistentVolumeClaimList
	var svcs corev1.ServiceList
	for _, l := range []client.ObjectList{&pods, &pvcs, &svcs} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing %T in %s: %w", l, ns, err)
		}
	}
	groups := []struct {
		file, what string
		objs       []runtime.Object
	}{
		{"etcdclusters.yaml", "EtcdCluster " + r.cluster.Name + " and the scratch clusters of its restores and drills", etcds},
		{"pods.yaml", "member pods and restore pods", filterObjs(pods.Items, mine)},
		{"pvcs.yaml", "PersistentVolumeClaims", filterObjs(pvcs.Items, mine)},
		{"services.yaml", "Services", filterObjs(svcs.Items, mine)},
		{"etcdbackupschedules.yaml", "EtcdBackupSchedules of the cluster", ptrs(r.schedules)},
		{"etcdbackups.yaml", "EtcdBackups of the cluster", ptrs(r.backups)},
		{"etcdrestores.yaml", "EtcdRestores of, into, from or drilling the cluster", ptrs(restores)},
	}
	about := map[string]bool{}
	var all []runtime.Object
	for _, g := range groups {
		if err := b.addObjects(c, g.file, g.what, g.objs); err != nil {
			return err
		}
		for _, o := range g.objs {
			o := o.(client.Object)
			kind, _ := apiutil.GVKForObject(o, c.Scheme())
			about[kind.Kind+"/"+o.GetName()] = true
		}
		all = append(all, g.objs...)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		b.note("events of %s not collected: %v", ns, err)
	} else {
		evs := filterObjs(events.Items, func(o client.Object) bool {
			e := o.(*corev1.Event)
			return about[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name]
		})
		slices.SortFunc(evs, func(x, y runtime.Object) int {
			return x.(*corev1.Event).LastTimestamp.Compare(y.(*corev1.Event).LastTimestamp.Time)
		})
		if err := b.addObjects(c, "events.yaml", "events about the objects above", evs); err != nil {
			return err
		}
	}
	b.secrets = secretNames(all)
	return nil
}

// relatedRestores are the EtcdRestores of ns that restore the cluster (in place or by
// recovery), use it as template, restore one of its backups or schedules, or are drills of
// one of its schedules.
func relatedRestores(ctx context.Context, c client.Reader, r *related) ([]etcdv1beta2.EtcdRestore, error) {
	var list etcdv1beta2.EtcdRestoreList
	if err := c.List(ctx, &list, client.InNamespace(r.cluster.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EtcdRestores in %s: %w", r.cluster.Namespace, err)
	}
	backups, schedules := map[string]bool{}, map[string]bool{}
	for _, b := range r.backups {
		backups[b.Name] = true
	}
	for _, s := range r.schedules {
		schedules[s.Name] = true
	}
	name := r.cluster.Name
	return slices.DeleteFunc(list.Items, func(rs etcdv1beta2.EtcdRestore) bool {
		sp := &rs.Spec
		return !(sp.EtcdCluster.Name == name || sp.ClusterTemplate != nil && sp.ClusterTemplate.Name == name ||
			sp.BackupRef != nil && backups[sp.BackupRef.Name] || sp.BackupScheduleRef != nil && schedules[sp.BackupScheduleRef.Name] ||
			schedules[rs.Labels[etcdbackupschedule.DrillLabel]] || rs.Labels[etcdv1beta2.LabelRecoveryOf] == name)
	}), nil
}

// collectOperators adds the operators' pods (as OperatorSelector selects them, in ns or in every
// namespace) and the scrubbed tail of each container's log, and of its previous instance when
// it restarted. What it cannot read is noted in the bundle, not an error: the cluster's
// objects are worth sending without it.
func collectOperators(ctx context.Context, c client.Client, ns string, logs PodLogs, lines int64, b *bundle) {
	sel, _ := labels.Parse(OperatorSelector)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		b.note("operator pods (%s) not collected: %v; try --operator-namespace", OperatorSelector, err)
		return
	}
	if len(pods.Items) == 0 {
		b.note("no operator pods found (%s) in %s", OperatorSelector, orAll(ns))
	}
	if err := b.addObjects(c, "operators/pods.yaml", "the operators' pods", ptrs(pods.Items)); err != nil {
		b.note("operator pods not written: %v", err)
	}
	for _, p := range pods.Items {
		restarted := map[string]bool{}
		for _, st := range p.Status.ContainerStatuses {
			restarted[st.Name] = st.RestartCount > 0
		}
		for _, ct := range p.Spec.Containers {
			for _, previous := range []bool{false, true} {
				if previous && !restarted[ct.Name] {
					continue
				}
				name := fmt.Sprintf("operators/logs/%s_%s_%s.log", p.Namespace, p.Name, ct.Name)
				if previous {
					name = strings.TrimSuffix(name, ".log") + ".previous.log"
				}
				if err := b.addLog(ctx, logs, name, p.Namespace, p.Name, ct.Name, lines, previous); err != nil {
					b.note("log of %s/%s container %s (previous %t) not collected: %v", p.Namespace, p.Name, ct.Name, previous, err)
				}
			}
		}
	}
}

// orAll is ns, or "all namespaces" for "".
func orAll(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
