package manager

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The label every object of an etcd cluster carries (internal/member.LabelApp=AppEtcd, checked by
// TestCacheSelectsMemberObjects; not imported: internal/member imports pkg/cluster, whose tests use
// internal/testutil, which imports this package).
const (
	etcdLabel      = "app"
	etcdLabelValue = "etcd"
)

// cacheOptions selects what the operators cache: of the core kinds they watch, only the objects
// of etcd clusters (label app=etcd, which member pods, restore seeds, restore check Jobs,
// volumes, Services and budgets carry, as coreos/etcd-operator's did), so that the operators' memory does not grow
// with the cluster's other Pods, PVCs and Services; and no object's managedFields. An object of
// theirs that lost the label, or a foreign object in the way of a name they need, is read
// through the API reader where it matters (createOwned, the restore operator's own pod).
//
// Watching every namespace, the operators leave excludeNamespaces out of every informer (a field
// selector on metadata.namespace): no object there ever starts a reconcile. Every kind they
// cache is namespaced; a cluster-scoped one would need its own ByObject without that selector
// (the API server refuses metadata.namespace for, e.g., Nodes).
func cacheOptions(watchNamespaces, excludeNamespaces []string) cache.Options {
	etcd := labels.SelectorFromSet(labels.Set{etcdLabel: etcdLabelValue})
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                   {Label: etcd},
			&batchv1.Job{}:                  {Label: etcd}, // the restore check's
			&corev1.PersistentVolumeClaim{}: {Label: etcd},
			&corev1.Service{}:               {Label: etcd},
			&policyv1.PodDisruptionBudget{}: {Label: etcd},
		},
	}
	var exclude []fields.Selector
	for _, ns := range excludeNamespaces {
		exclude = append(exclude, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	if len(exclude) > 0 {
		opts.DefaultFieldSelector = fields.AndSelectors(exclude...)
	}
	if len(watchNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range watchNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
