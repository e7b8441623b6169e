package etcdrestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// AnnotationClusterTemplate holds, on an EtcdRestore that replaces a cluster in place, the
// replaced cluster's labels, annotations and spec, saved before the cluster is deleted so that
// a restart of the operator between deleting and re-creating it loses nothing.
const AnnotationClusterTemplate = "etcd.database.coreos.com/cluster-template"

// template is what a restored cluster copies from its template.
type template struct {
	Labels      map[string]string       `json:"labels,omitempty"`
	Annotations map[string]string       `json:"annotations,omitempty"`
	Spec        etcdv1beta2.ClusterSpec `json:"spec"`
}

func templateOf(c *etcdv1beta2.EtcdCluster) *template {
	t := &template{Labels: c.Labels, Annotations: map[string]string{}, Spec: *c.Spec.DeepCopy()}
	for k, v := range c.Annotations {
		if k != corev1.LastAppliedConfigAnnotation && k != etcdv1beta2.AnnotationRestoreUID && k != etcdv1beta2.AnnotationReplacedBy && k != etcdv1beta2.AnnotationReplacedByName {
			t.Annotations[k] = v
		}
	}
	t.Spec.Bootstrap = nil
	t.Spec.Paused = false
	return t
}

// ensureCluster returns the EtcdCluster rs restores into, once it exists with rs's restore
// bootstrap. An existing cluster of that name is replaced (preflight checks first, then its spec
// saved, its volumes retained, and it deleted) unless rs is a restore into a new name; a new
// one copies its template (after the same preflight checks). It returns an errWait while the
// old cluster is going away.
func (r *Reconciler) ensureCluster(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*etcdv1beta2.EtcdCluster, error) {
	name := rs.Spec.EtcdCluster.Name
	c := &etcdv1beta2.EtcdCluster{}
	err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: name}, c)
	switch {
	case err == nil && ours(c, rs):
		return c, nil
	case err == nil && c.DeletionTimestamp != nil:
		msg, err := r.stuckPods(ctx, rs, c)
		if err != nil {
			return nil, err
		}
		return nil, errWait{msg}
	case err == nil && rs.Spec.ClusterTemplate != nil:
		return nil, reason.Errorf(etcdv1beta2.ReasonClusterExists, "EtcdCluster %s already exists: a restore with clusterTemplate makes a new cluster and never replaces one; choose another name, or leave clusterTemplate unset to replace %s", name, name)
	case err == nil:
		return nil, r.replace(ctx, rs, c)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting EtcdCluster %s: %w", name, err)
	}

	tmpl, err := r.template(ctx, rs)
	if err != nil {
		return nil, err
	}
	names, err := r.memberNames(ctx, rs.Namespace, name, tmpl.Spec.Size)
	if err != nil {
		return nil, err
	}
	src, err := pinned(rs)
	if err != nil {
		return nil, err
	}
	c = newCluster(rs, tmpl, name, names, src)
	if _, replaced := rs.Annotations[AnnotationClusterTemplate]; replaced {
		// In place: the old cluster is gone, its volumes are retained; record them again in
		// case the pass that retained them did not get to write the status.
		if err := r.recordRetained(ctx, rs); err != nil {
			return nil, err
		}
	} else if err := r.preflight(ctx, rs, c, names); err != nil {
		return nil, err
	}
	if err := r.Create(ctx, c); err != nil {
		return nil, fmt.Errorf("creating EtcdCluster %s: %w", name, err)
	}
	tlsNote := ""
	if c.Spec.TLS != nil && c.Spec.TLS.Auto != nil {
		tlsNote = "; TLS certificates for its own names are made by the etcd operator (TLS.auto)"
		if ref := c.Spec.TLS.Auto.IssuerRef; ref != nil {
			tlsNote = fmt.Sprintf("; TLS certificates for its own names are issued by cert-manager's %s %s (TLS.auto.issuerRef)", ref.Kind, ref.Name)
		}
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, "ClusterCreated", "Created EtcdCluster %s (size %d, etcd %s) whose members %s are restored from the backup at once%s", name, c.Spec.Size, c.Spec.Version, strings.Join(names, ", "), tlsNote)
	return c, nil
}

// newCluster is the EtcdCluster rs creates from tmpl: the restore bootstrap names rs, the seed
// member (names[0]), every member restored at once (names) and the verified backup src they
// are built from (by the etcd operator), and the restore-uid annotation ties the cluster to rs.
func newCluster(rs *etcdv1beta2.EtcdRestore, tmpl *template, name string, names []string, src *source) *etcdv1beta2.EtcdCluster {
	annotations := map[string]string{etcdv1beta2.AnnotationRestoreUID: string(rs.UID)}
	for k, v := range tmpl.Annotations {
		if k != etcdv1beta2.AnnotationRestoreUID {
			annotations[k] = v
		}
	}
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: tmpl.Labels, Annotations: annotations},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: rs.Name, SeedMember: names[0], Members: names,
		Source: restoreSource(rs, src)}}
	if rs.Spec.TTLSecondsAfterFinished != nil && rs.Spec.ClusterTemplate != nil {
		// A drill's scratch cluster is disposable by declaration: deleting the drill deletes it
		// even before the TTL. Any other restored cluster outlives its EtcdRestore.
		c.OwnerReferences = []metav1.OwnerReference{restoreRef(rs)}
		// Nor does it recover itself: an automatic restore would replace it with a cluster
		// this drill did not make, which its TTL would then not delete.
		c.Spec.Recovery = nil
	}
	return c
}

// replace runs the preflight checks, saves c's template on rs, marks c as replaced by rs (the
// etcd operator then retains c's volumes for rs), waits until c controls no volume any more,
// then deletes c; its pods go with it. A cluster another unfinished EtcdRestore made is never
// replaced. Its volumes are never touched here: the etcd operator alone changes them.
func (r *Reconciler) replace(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) error {
	if _, saved := rs.Annotations[AnnotationClusterTemplate]; !saved {
		tmpl, err := r.preflightReplace(ctx, rs, c)
		if err != nil {
			return err
		}
		if err := r.saveTemplate(ctx, rs, tmpl); err != nil {
			return fmt.Errorf("saving the template of EtcdCluster %s: %w", c.Name, err)
		}
	}
	if err := r.markReplaced(ctx, rs, c); err != nil {
		return err
	}
	if held, err := r.stillControlled(ctx, c); err != nil || len(held) > 0 {
		if err != nil {
			return err
		}
		return errWait{fmt.Sprintf("waiting for the etcd operator to retain the volumes of EtcdCluster %s (%s) before deleting it", c.Name, strings.Join(held, ", "))}
	}
	if err := r.recordRetained(ctx, rs); err != nil {
		return err
	}
	// Deleted only as read now, with the mark still rs's: the etcd operator cancels the mark of
	// a restore it finds gone or failed before it gives the cluster its volumes back.
	fresh := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
		return fmt.Errorf("reading EtcdCluster %s before deleting it: %w", c.Name, err)
	}
	if uid, _, ok := restoreboot.Replacing(fresh); !ok || uid != string(rs.UID) || fresh.UID != c.UID {
		return errWait{"EtcdCluster " + c.Name + " is no longer marked as replaced by this restore"}
	}
	if running, err := r.runningMembers(ctx, fresh); err != nil || len(running) > 0 {
		if err != nil {
			return err
		}
		return errWait{fmt.Sprintf("waiting for the etcd operator to stop the members of EtcdCluster %s (%s) before deleting it", c.Name, strings.Join(running, ", "))}
	}
	uid, rv := fresh.UID, fresh.ResourceVersion
	err := r.Delete(ctx, fresh, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting EtcdCluster %s to replace it: %w", c.Name, err)
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, "ReplacingCluster", "Backup and preflight checks passed; deleted EtcdCluster %s (its pods go with it, its %d volumes are kept until the restored cluster is verified) to restore it from %s", c.Name, len(rs.Status.RetainedVolumes), rs.Status.BackupLocation)
	return errWait{"deleting the old EtcdCluster " + c.Name + " and its pods"}
}

// markReplaced annotates c as replaced by rs (AnnotationReplacedBy, AnnotationReplacedByName)
// and carries rs's opt-in to force-delete stuck pods.
func (r *Reconciler) markReplaced(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) error {
	want := map[string]string{etcdv1beta2.AnnotationReplacedBy: string(rs.UID), etcdv1beta2.AnnotationReplacedByName: rs.Name}
	if rs.Annotations[etcdv1beta2.AnnotationForceDeleteStuckPods] == "true" {
		want[etcdv1beta2.AnnotationForceDeleteStuckPods] = "true"
	}
	return r.annotate(ctx, c, want)
}

// annotate sets want on c's annotations, with an optimistic lock; c is updated.
func (r *Reconciler) annotate(ctx context.Context, c *etcdv1beta2.EtcdCluster, want map[string]string) error {
	patch := c.DeepCopy()
	if patch.Annotations == nil {
		patch.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range want {
		if patch.Annotations[k] != v {
			patch.Annotations[k], changed = v, true
		}
	}
	if !changed {
		return nil
	}
	if err := r.Patch(ctx, patch, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("annotating EtcdCluster %s: %w", c.Name, err)
	}
	c.Annotations, c.ResourceVersion = patch.Annotations, patch.ResourceVersion
	return nil
}

// runningMembers lists, for a cluster on volumes, the member pods c controls that the etcd
// operator has not stopped yet (restoreboot.Stopping): it stops them at once once their volumes
// are retained, where the garbage collector would give each its own grace period. Pods stuck
// Terminating count as stopped here; stuckPods reports them once c is deleted. A cluster whose
// data lives in its pods is stopped only once deleted: nothing to wait for.
func (r *Reconciler) runningMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]string, error) {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels{member.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the pods of EtcdCluster %s: %w", c.Name, err)
	}
	var running []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if controlledBy(p, c.UID) && !restoreboot.Stopping(p) {
			running = append(running, p.Name)
		}
	}
	return running, nil
}

// stillControlled lists the volumes c still controls, read around the cache.
func (r *Reconciler) stillControlled(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]string, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the volumes of EtcdCluster %s: %w", c.Name, err)
	}
	var held []string
	for _, pvc := range pvcs.Items {
		if controlledBy(&pvc, c.UID) && pvc.DeletionTimestamp == nil {
			held = append(held, pvc.Name)
		}
	}
	return held, nil
}

// preflightReplace checks that rs may replace c (no other unfinished restore made it) and runs
// the preflight of the cluster that would replace it; it returns c's template.
func (r *Reconciler) preflightReplace(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) (*template, error) {
	if holder, err := r.restoreOf(ctx, c); err != nil || holder != nil {
		if err != nil {
			return nil, err
		}
		return nil, errLocked{holder: holder.Name}
	}
	tmpl := templateOf(c)
	names, err := r.memberNames(ctx, rs.Namespace, c.Name, tmpl.Spec.Size)
	if err != nil {
		return nil, err
	}
	src, err := pinned(rs)
	if err != nil {
		return nil, err
	}
	if err := r.preflight(ctx, rs, newCluster(rs, tmpl, c.Name, names, src), names); err != nil {
		return nil, err
	}
	return tmpl, nil
}

// saveTemplate records tmpl on rs before the cluster it describes is deleted.
func (r *Reconciler) saveTemplate(ctx context.Context, rs *etcdv1beta2.EtcdRestore, tmpl *template) error {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return err
	}
	patch := rs.DeepCopy()
	if patch.Annotations == nil {
		patch.Annotations = map[string]string{}
	}
	patch.Annotations[AnnotationClusterTemplate] = string(raw)
	if err := r.Patch(ctx, patch, client.MergeFrom(rs)); err != nil {
		return err
	}
	rs.Annotations = patch.Annotations
	rs.ResourceVersion = patch.ResourceVersion
	return nil
}

// template returns the spec the new cluster copies: the replaced cluster's, saved on rs, or
// clusterTemplate's.
func (r *Reconciler) template(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*template, error) {
	if raw, ok := rs.Annotations[AnnotationClusterTemplate]; ok {
		t := &template{}
		if err := json.Unmarshal([]byte(raw), t); err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonTemplateNotFound, "annotation %s is not a cluster template: %v", AnnotationClusterTemplate, err)
		}
		return t, nil
	}
	if rs.Spec.ClusterTemplate == nil {
		return r.savedTemplate(ctx, rs)
	}
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.ClusterTemplate.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reason.Errorf(etcdv1beta2.ReasonTemplateNotFound, "clusterTemplate EtcdCluster %s not found", rs.Spec.ClusterTemplate.Name)
		}
		return nil, fmt.Errorf("getting clusterTemplate %s: %w", rs.Spec.ClusterTemplate.Name, err)
	}
	t := templateOf(c)
	t.Labels, t.Annotations = nil, nil // a scratch cluster is not the template's twin for selectors
	if t.Spec.TLS != nil && t.Spec.TLS.Static != nil {
		// The template's certificates name the template's members and Service, not this
		// cluster's: the new cluster gets certificates of its own, made by the etcd operator.
		t.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
	}
	return t, nil
}

// savedTemplate is the template of an in-place restore whose cluster is gone and that names no
// clusterTemplate: a retry after an earlier in-place restore of the same cluster failed once it
// had deleted the cluster (e.g. its old pods stayed Terminating past its deadline). The spec
// that restore saved is the replaced cluster's; the newest one saved is used.
func (r *Reconciler) savedTemplate(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*template, error) {
	name := rs.Spec.EtcdCluster.Name
	list := &etcdv1beta2.EtcdRestoreList{}
	if err := r.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EtcdRestores for a saved template of EtcdCluster %s: %w", name, err)
	}
	var from *etcdv1beta2.EtcdRestore
	for i := range list.Items {
		o := &list.Items[i]
		if _, ok := o.Annotations[AnnotationClusterTemplate]; !ok || o.UID == rs.UID || o.Spec.EtcdCluster.Name != name || o.Spec.ClusterTemplate != nil {
			continue
		}
		if from == nil || from.CreationTimestamp.Before(&o.CreationTimestamp) {
			from = o
		}
	}
	if from == nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonTemplateNotFound, "EtcdCluster %s does not exist, so it cannot be the template, and no EtcdRestore saved its spec: set clusterTemplate to the EtcdCluster whose spec the restored cluster copies", name)
	}
	t := &template{}
	if err := json.Unmarshal([]byte(from.Annotations[AnnotationClusterTemplate]), t); err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonTemplateNotFound, "annotation %s of EtcdRestore %s is not a cluster template: %v", AnnotationClusterTemplate, from.Name, err)
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, "TemplateReused", "EtcdCluster %s does not exist: restoring it with the spec EtcdRestore %s saved when it replaced it", name, from.Name)
	return t, nil
}
