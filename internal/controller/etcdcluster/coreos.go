package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// coreosNodeLabel is the label coreos/etcd-operator puts on its member pods (the member's
// name); this operator's pods carry member.LabelMember instead.
const coreosNodeLabel = "etcd_node"

// holdCoreosCluster refuses to act on a cluster whose member pods coreos/etcd-operator made (a
// user replaced the coreos operator's Deployment with this one while its clusters run). Those
// pods carry this operator's selector labels and, for the same EtcdCluster object, its
// controller reference, but their names, flags, restart policy and etcd versions are coreos':
// left to the member logic, they could be taken for strangers, replaced or upgraded. Until a
// takeover exists (issue 32), nothing of such a cluster is changed; the error says what was
// found and what the user can do (docs/migrating-from-coreos.md).
func (r *Reconciler) holdCoreosCluster(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return fmt.Errorf("listing the pods of %s: %w", klog.KObj(c), err)
	}
	var found []string
	for _, p := range pods.Items {
		_, coreos := p.Labels[coreosNodeLabel]
		_, ours := p.Labels[member.LabelMember]
		if coreos && !ours {
			found = append(found, p.Name)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return reason.Errorf(etcdv1beta2.ReasonCoreosMembersFound,
		"pods %s were made by coreos/etcd-operator (label %s): this operator changes nothing of cluster %s (no pod, volume, Service or member is touched) until it can take such a cluster over; keep the coreos operator running for it, or move it as docs/migrating-from-coreos.md says",
		strings.Join(found, ", "), coreosNodeLabel, c.Name)
}
