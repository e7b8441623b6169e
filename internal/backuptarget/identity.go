package backuptarget

import (
	"context"
	"fmt"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Identity is the cluster that a backup spec of namespace ns reaches, as the keys of its backups
// (and capture segments) record it: the namespace; the EtcdCluster the spec names or, for
// etcdEndpoints, the EtcdCluster of the namespace whose status.clusterID is clusterID (the one
// the member reported), else snapshot.UnknownCluster; and clusterID.
func Identity(ctx context.Context, c client.Reader, ns string, spec *etcdv1beta2.BackupSpec, clusterID uint64) (snapshot.Identity, error) {
	id := snapshot.Identity{Namespace: ns, Cluster: snapshot.UnknownCluster, ClusterID: clusterID}
	if ref := spec.EtcdCluster; ref != nil {
		id.Cluster = ref.Name
		return id, nil
	}
	if clusterID == 0 {
		return id, nil
	}
	list := &etcdv1beta2.EtcdClusterList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return id, fmt.Errorf("listing EtcdClusters of namespace %s for the cluster ID %x: %w", ns, clusterID, err)
	}
	var names []string
	for _, cl := range list.Items {
		if cid, err := strconv.ParseUint(cl.Status.ClusterID, 16, 64); err == nil && cid == clusterID {
			names = append(names, cl.Name)
		}
	}
	if len(names) == 1 { // two clusters claiming one ID: neither is trusted
		id.Cluster = names[0]
	}
	return id, nil
}
