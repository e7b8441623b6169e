package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list

// checkVolumeQuota fails when a ResourceQuota of the namespace has no room for the volumes of
// every member restored at once: the restore creates len(names) of them, while an in-place restore keeps the replaced
// cluster's volumes until the restored cluster is verified, so they all count at once. Quotas
// with scopes are left to admission: scopes select pods, and the check would have to guess.
func (r *Reconciler) checkVolumeQuota(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, names []string) error {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	pvc := member.NewPVC(c, names[0])
	quotas := &corev1.ResourceQuotaList{}
	// Read around the cache: a quota is read once per restore, not worth an informer.
	if err := r.APIReader.List(ctx, quotas, client.InNamespace(rs.Namespace)); err != nil {
		return fmt.Errorf("listing the namespace's ResourceQuotas: %w", err)
	}
	n := int64(len(names))
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	need := map[corev1.ResourceName]resource.Quantity{
		corev1.ResourcePersistentVolumeClaims: *resource.NewQuantity(n, resource.DecimalSI),
		corev1.ResourceRequestsStorage:        mul(size, n),
	}
	if class := pvc.Spec.StorageClassName; class != nil && *class != "" {
		prefix := corev1.ResourceName(*class + ".storageclass.storage.k8s.io/")
		need[prefix+corev1.ResourcePersistentVolumeClaims] = need[corev1.ResourcePersistentVolumeClaims]
		need[prefix+corev1.ResourceRequestsStorage] = need[corev1.ResourceRequestsStorage]
	}
	for _, q := range quotas.Items {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			continue
		}
		for res, want := range need {
			hard, ok := q.Status.Hard[res]
			if !ok {
				hard, ok = q.Spec.Hard[res]
			}
			if !ok {
				continue
			}
			used := q.Status.Used[res]
			total := used.DeepCopy()
			total.Add(want)
			if total.Cmp(hard) > 0 {
				return reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "ResourceQuota %s has no room for the restored members' volumes: %s is %s of %s used, and the restore needs %s more (%d volumes of %s, created at once; the replaced cluster's volumes stay until the restored cluster is verified)"+noChange,
					q.Name, res, used.String(), hard.String(), want.String(), n, size.String())
			}
		}
	}
	return nil
}

// mul is q times n.
func mul(q resource.Quantity, n int64) resource.Quantity {
	out := resource.Quantity{Format: q.Format}
	for range n {
		out.Add(q)
	}
	return out
}
