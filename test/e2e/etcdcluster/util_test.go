//go:build e2e

package etcdcluster

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func clientv3WithSerializable() clientv3.OpOption { return clientv3.WithSerializable() }

// degradedMessage is the message of the Degraded condition.
func degradedMessage(c *etcdv1beta2.EtcdCluster) string {
	cond := apimeta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
	if cond == nil {
		return ""
	}
	return cond.Message
}
