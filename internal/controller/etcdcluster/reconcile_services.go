package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
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

func (r *Reconciler) ensureService(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, mutate func(*corev1.Service)) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace}}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, svc, func() error {
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		for k, v := range member.SelectorLabels(c) {
			svc.Labels[k] = v
		}
		svc.Spec.Selector = member.SelectorLabels(c)
		mutate(svc)
		return controllerutil.SetControllerReference(c, svc, r.Scheme())
	})
	if err != nil {
		return fmt.Errorf("ensuring Service %s of %s: %w", name, klog.KObj(c), err)
	}
	return nil
}
