package etcdbackup

import (
	"context"
	"fmt"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// identity is the cluster a backup of member m belongs to, as its object key records it: the
// backup's namespace; the EtcdCluster the spec names or, for etcdEndpoints, the EtcdCluster of
// the namespace whose status.clusterID is the cluster ID m reported, else
// snapshot.UnknownCluster; and m's cluster ID.
func identity(ctx context.Context, c client.Reader, obj *etcdv1beta2.EtcdBackup, m snapshot.Member) (snapshot.Identity, error) {
	id := snapshot.Identity{Namespace: obj.Namespace, Cluster: snapshot.UnknownCluster, ClusterID: m.ClusterID}
	if ref := obj.Spec.EtcdCluster; ref != nil {
		id.Cluster = ref.Name
		return id, nil
	}
	if m.ClusterID == 0 {
		return id, nil
	}
	list := &etcdv1beta2.EtcdClusterList{}
	if err := c.List(ctx, list, client.InNamespace(obj.Namespace)); err != nil {
		return id, fmt.Errorf("listing EtcdClusters of namespace %s for the cluster ID %x: %w", obj.Namespace, m.ClusterID, err)
	}
	var names []string
	for _, cl := range list.Items {
		if cid, err := strconv.ParseUint(cl.Status.ClusterID, 16, 64); err == nil && cid == m.ClusterID {
			names = append(names, cl.Name)
		}
	}
	if len(names) == 1 { // two clusters claiming one ID: neither is trusted
		id.Cluster = names[0]
	}
	return id, nil
}
