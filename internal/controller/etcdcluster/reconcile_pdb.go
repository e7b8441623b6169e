package etcdcluster

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// maxUnavailable is how many members of a cluster of size a voluntary disruption (a node
// drain, an eviction) may take down at once: never so many that the rest lose quorum, and
// never more than one. Size 1 and 2 allow none, 3 to 7 allow one.
func maxUnavailable(size int32) int32 {
	return min(1, size-(size/2+1))
}

// reconcilePDB creates or updates the PodDisruptionBudget <cluster> over the member pods.
// The disruption controller counts the expected pods through the EtcdCluster's /scale
// subresource (spec.size), so a cluster still growing allows no eviction either. A budget of
// that name that c does not control is never changed: errNotOwned.
func (r *Reconciler) reconcilePDB(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	want := policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptrIntOrString(intstr.FromInt32(maxUnavailable(c.Spec.Size))),
		Selector:       &metav1.LabelSelector{MatchLabels: member.SelectorLabels(c)},
	}
	pdb := &policyv1.PodDisruptionBudget{}
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, pdb)
	if apierrors.IsNotFound(err) {
		pdb = &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: member.SelectorLabels(c)},
			Spec:       want,
		}
		if err := controllerutil.SetControllerReference(c, pdb, r.Scheme()); err != nil {
			return fmt.Errorf("owning PodDisruptionBudget %s: %w", c.Name, err)
		}
		return r.createOwned(ctx, c, pdb, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget")
	}
	if err != nil {
		return fmt.Errorf("getting PodDisruptionBudget %s of %s: %w", c.Name, klog.KObj(c), err)
	}
	if !controlledBy(pdb, c) {
		return notOwned("PodDisruptionBudget", pdb, c)
	}
	if equality.Semantic.DeepEqual(pdb.Spec.MaxUnavailable, want.MaxUnavailable) && equality.Semantic.DeepEqual(pdb.Spec.Selector, want.Selector) &&
		pdb.Spec.MinAvailable == nil {
		return nil
	}
	before := pdb.DeepCopy()
	pdb.Spec.MaxUnavailable, pdb.Spec.Selector, pdb.Spec.MinAvailable = want.MaxUnavailable, want.Selector, nil
	if err := r.Patch(ctx, pdb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating PodDisruptionBudget %s of %s: %w", c.Name, klog.KObj(c), err)
	}
	return nil
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }
