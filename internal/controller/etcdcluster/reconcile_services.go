package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// reconcileServices creates or updates the headless peer Service (member DNS names, not-ready
// addresses published so that members find each other while they start) and the client Service.
func (r *Reconciler) reconcileServices(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	client := corev1.ServicePort{Name: "client", Port: etcdv1beta2.EtcdClientPort, TargetPort: intstr.FromInt32(etcdv1beta2.EtcdClientPort), Protocol: corev1.ProtocolTCP}
	peer := corev1.ServicePort{Name: "peer", Port: etcdv1beta2.EtcdPeerPort, TargetPort: intstr.FromInt32(etcdv1beta2.EtcdPeerPort), Protocol: corev1.ProtocolTCP}
	if err := r.ensureService(ctx, c, c.PeerServiceName(), func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.PublishNotReadyAddresses = true
		s.Spec.Ports = []corev1.ServicePort{client, peer}
	}); err != nil {
		return err
	}
	return r.ensureService(ctx, c, c.ClientServiceName(), func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{client}
	})
}

// ensureService creates Service name controlled by c, or brings the one c controls to the
// wanted spec. A Service of that name that c does not control (no controller, another
// controller, an old incarnation of the cluster) is never patched or adopted: errNotOwned.
func (r *Reconciler) ensureService(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, mutate func(*corev1.Service)) error {
	build := func(svc *corev1.Service) {
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		for k, v := range member.SelectorLabels(c) {
			svc.Labels[k] = v
		}
		svc.Spec.Selector = member.SelectorLabels(c)
		mutate(svc)
	}
	svc := &corev1.Service{}
	err := r.Get(ctx, ctrlclient.ObjectKey{Namespace: c.Namespace, Name: name}, svc)
	if apierrors.IsNotFound(err) {
		svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace}}
		build(svc)
		if err := controllerutil.SetControllerReference(c, svc, r.Scheme()); err != nil {
			return fmt.Errorf("owning Service %s: %w", name, err)
		}
		if err := r.createOwned(ctx, c, svc, &corev1.Service{}, "Service"); err != nil {
			return err
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting Service %s of %s: %w", name, klog.KObj(c), err)
	}
	if !controlledBy(svc, c) {
		return notOwned("Service", svc, c)
	}
	before := svc.DeepCopy()
	build(svc)
	if equality.Semantic.DeepEqual(before, svc) {
		return nil
	}
	if err := r.Patch(ctx, svc, ctrlclient.MergeFromWithOptions(before, ctrlclient.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating Service %s of %s: %w", name, klog.KObj(c), err)
	}
	return nil
}
