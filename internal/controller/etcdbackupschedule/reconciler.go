// Package etcdbackupschedule holds the controller of EtcdBackupSchedule.
package etcdbackupschedule

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/etcd-operator/etcd-operator/internal/options"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconciler reconciles EtcdBackupSchedule objects.
type Reconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  *options.Options
}

// Setup registers the EtcdBackupSchedule controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackupSchedule{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the EtcdBackupSchedule controller: %w", err)
	}
	return nil
}

// Reconcile observes one EtcdBackupSchedule. Not yet implemented beyond observing: see the open issues.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &etcdv1beta2.EtcdBackupSchedule{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdBackupSchedule %s: %w", req.NamespacedName, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Observed EtcdBackupSchedule", "generation", obj.Generation)
	return ctrl.Result{}, nil
}
