package etcdrestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
)

// memberNames are the names of the n members of a cluster created now: <cluster>-<k> ..
// <cluster>-<k+n-1>, k one above the highest index of any pod or volume labelled with the
// cluster's name (an old incarnation's pods still terminating, retained volumes, a stranger's
// pod), 0 when there are none. No member lands on an object the restore did not create.
func (r *Reconciler) memberNames(ctx context.Context, ns, cluster string, n int32) ([]string, error) {
	next, err := r.nextMemberIndex(ctx, ns, cluster)
	if err != nil {
		return nil, err
	}
	names := make([]string, max(n, 1))
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", cluster, next+i)
	}
	return names, nil
}

// nextMemberIndex is one above the highest member index of any pod or volume labelled with
// the cluster's name.
func (r *Reconciler) nextMemberIndex(ctx context.Context, ns, cluster string) (int, error) {
	sel := client.MatchingLabels{member.LabelCluster: cluster}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(ns), sel); err != nil {
		return 0, fmt.Errorf("listing pods of EtcdCluster %s: %w", cluster, err)
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(ns), sel); err != nil {
		return 0, fmt.Errorf("listing volumes of EtcdCluster %s: %w", cluster, err)
	}
	next := 0
	bump := func(name string) {
		if n, ok := memberIndex(cluster, name); ok && n >= next {
			next = n + 1
		}
	}
	for i := range pods.Items {
		bump(pods.Items[i].Name)
	}
	for i := range pvcs.Items {
		bump(pvcs.Items[i].Name)
	}
	return next, nil
}

// memberIndex parses n from a member name <cluster>-<n>.
func memberIndex(cluster, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, cluster+"-")
	if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}
