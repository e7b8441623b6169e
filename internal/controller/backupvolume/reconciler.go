// Package backupvolume is the backup operator's controller of backup PersistentVolumeClaims
// (storageType PVC): while anything in a claim's namespace names it as storage (an
// EtcdBackupSchedule, a periodic or unfinished EtcdBackup, an unfinished EtcdRestore, an
// EtcdCluster restoring from it), it keeps a server on the claim (internal/volumeserver): a Pod,
// a Service and a Secret with the server's token and certificate, all three named
// backupvolume.Name(claim) and controlled by the claim. Once nothing names the claim, or the
// claim is being deleted, it deletes them, so the claim is free to be mounted elsewhere or to
// go. It never touches the claim itself, nor any object of that name the claim does not
// control.
package backupvolume

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/ownimage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups;etcdbackupschedules;etcdrestores;etcdclusters,verbs=get;list;watch

// Reconciler keeps the servers of backup claims. Requests name a claim (namespace and name).
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold: the claims (the users') and Secrets.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	// Image is the server's image (the operator's own by default).
	Image string
	// Recheck is how often a served claim is looked at again: the operators do not watch the
	// users' claims (their cache holds only etcd objects), so a claim's deletion, which waits
	// for the server pod to let go of it, is seen this long after at most. 0: a minute.
	Recheck time.Duration
}

func (r *Reconciler) recheck() reconcile.Result {
	if r.Recheck > 0 {
		return reconcile.Result{RequeueAfter: r.Recheck}
	}
	return reconcile.Result{RequeueAfter: time.Minute}
}

// Setup registers the controller with the manager (manager.SetupFunc).
func Setup(mgr manager.Manager, opts *options.Options) error {
	image := opts.VolumeServerImage
	if image == "" {
		var err error
		if image, err = ownimage.Of(context.Background(), mgr.GetAPIReader(), "backup-operator", "--volume-server-image"); err != nil {
			// Not fatal: the operator runs outside a pod in tests and development; a claim's
			// server then fails to start and says why.
			log.Log.Info("backup volume servers have no image until --volume-server-image is set", "reason", err.Error())
		}
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Clock: clock.RealClock{}, Image: image}
	return r.SetupWithManager(mgr)
}

// SetupWithManager watches whatever may name a claim, and the servers' Pods and Services.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named("backupvolume").
		Watches(&etcdv1beta2.EtcdBackup{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			b := o.(*etcdv1beta2.EtcdBackup)
			return claimRequest(b.Namespace, claimOf(b.Spec.StorageType, &b.Spec.BackupSource))
		})).
		Watches(&etcdv1beta2.EtcdBackupSchedule{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return claimRequest(o.GetNamespace(), scheduleClaim(o.(*etcdv1beta2.EtcdBackupSchedule)))
		})).
		Watches(&etcdv1beta2.EtcdRestore{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			claim, _ := restoreClaim(ctx, r.Client, o.(*etcdv1beta2.EtcdRestore))
			return claimRequest(o.GetNamespace(), claim)
		})).
		Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			c := o.(*etcdv1beta2.EtcdCluster)
			if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil || c.Spec.Bootstrap.Restore.Source == nil {
				return nil
			}
			src := c.Spec.Bootstrap.Restore.Source
			return claimRequest(c.Namespace, claimOf(src.StorageType, &src.BackupSource))
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(serverRequest)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(serverRequest)).
		WithOptions(ctrl.Options{MaxConcurrentReconciles: 2})
	return b.Complete(r)
}

func claimRequest(ns, claim string) []reconcile.Request {
	if claim == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: claim}}}
}

// serverRequest maps a server's Pod or Service to its claim.
func serverRequest(_ context.Context, o client.Object) []reconcile.Request {
	claim := o.GetAnnotations()[AnnotationClaim]
	if claim == "" || o.GetLabels()[backupvolume.LabelClaim] != backupvolume.Name(claim) {
		return nil
	}
	return claimRequest(o.GetNamespace(), claim)
}

// Reconcile keeps or removes the server of one claim.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, pvc); err != nil {
		// A claim that is gone takes its server along (garbage collection); one that never
		// existed has none: the users' backups and restores say that their storage is unreachable.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	need, err := users(ctx, r.Client, pvc.Namespace, pvc.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(need) == 0 || pvc.DeletionTimestamp != nil {
		return reconcile.Result{}, r.stop(ctx, pvc, "Nothing names this claim as backup storage any more")
	}
	return r.serve(ctx, pvc, need)
}

// serve makes sure the claim's Secret, Service and Pod exist, in that order.
func (r *Reconciler) serve(ctx context.Context, pvc *corev1.PersistentVolumeClaim, need []string) (reconcile.Result, error) {
	secret, err := r.secret(ctx, pvc)
	if err != nil || secret == nil {
		return reconcile.Result{RequeueAfter: time.Minute}, err
	}
	if !r.createIfMissing(ctx, pvc, &corev1.Service{}, newService(pvc)) {
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	if r.Image == "" {
		r.Recorder.Event(pvc, corev1.EventTypeWarning, "VolumeServerNoImage", "the backup operator knows no image for the volume server: set --volume-server-image, or POD_NAME and POD_NAMESPACE")
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	pod := &corev1.Pod{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: backupvolume.Name(pvc.Name)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		if r.createIfMissing(ctx, pvc, &corev1.Pod{}, newPod(pvc, r.Image)) {
			r.Recorder.Event(pvc, corev1.EventTypeNormal, "VolumeServerStarted",
				fmt.Sprintf("Started pod %s to serve this claim's backups to the operators, for %s", backupvolume.Name(pvc.Name), strings.Join(need, ", ")))
		}
		return r.recheck(), nil
	case err != nil:
		return reconcile.Result{}, err
	case !metav1.IsControlledBy(pod, pvc):
		r.refuse(pvc, pod)
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	case pod.DeletionTimestamp != nil:
		return reconcile.Result{}, nil // the watch brings the claim back once it is gone
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || pod.Spec.Containers[0].Image != r.Image:
		// A pod that ended (evicted, its node lost) or runs another release's image: replaced.
		return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
	}
	return r.recheck(), nil
}

// secret returns the claim's Secret, made when missing and renewed (with the pod, which loaded
// the old certificate) when its certificate is about to expire; nil when another object holds
// the name.
func (r *Reconciler) secret(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: pvc.Namespace, Name: backupvolume.Name(pvc.Name)}
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		if s, err = newSecret(pvc, r.Clock.Now()); err != nil {
			return nil, fmt.Errorf("making the volume server's credentials: %w", err)
		}
		if err := r.Client.Create(ctx, s); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		return s, nil
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(s, pvc):
		r.refuse(pvc, s)
		return nil, nil
	case volume.Expires(s.Data).Sub(r.Clock.Now()) < certRenewBefore:
		r.Recorder.Event(pvc, corev1.EventTypeNormal, "VolumeServerCertificateRenewed", "the volume server's certificate expires "+volume.Expires(s.Data).UTC().Format(time.RFC3339)+": replacing its Secret and pod")
		return nil, r.stop(ctx, pvc, "Its certificate is renewed")
	}
	return s, nil
}

// createIfMissing creates want unless an object of its name exists; it reports whether the
// claim controls what is there now.
func (r *Reconciler) createIfMissing(ctx context.Context, pvc *corev1.PersistentVolumeClaim, existing, want client.Object) bool {
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), existing)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, want); err != nil {
			r.Recorder.Event(pvc, corev1.EventTypeWarning, "VolumeServerFailed", fmt.Sprintf("creating %T %s: %v", want, want.GetName(), err))
			return false
		}
		return true
	}
	if err != nil {
		return false
	}
	if !metav1.IsControlledBy(existing, pvc) {
		r.refuse(pvc, existing)
		return false
	}
	return true
}

// refuse reports an object in the way of the server's name that this claim does not control.
func (r *Reconciler) refuse(pvc *corev1.PersistentVolumeClaim, o client.Object) {
	r.Recorder.Event(pvc, corev1.EventTypeWarning, "VolumeServerNameTaken",
		fmt.Sprintf("%T %s exists and is not this claim's: the backup volume server needs the name; it is left alone, and backups to this claim wait", o, o.GetName()))
}

// stop deletes the claim's Pod, Service and Secret, each only if this claim controls it, and
// says why in an event.
func (r *Reconciler) stop(ctx context.Context, pvc *corev1.PersistentVolumeClaim, why string) error {
	key := client.ObjectKey{Namespace: pvc.Namespace, Name: backupvolume.Name(pvc.Name)}
	stopped := false
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.Service{}, &corev1.Secret{}} {
		if err := r.APIReader.Get(ctx, key, o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if !metav1.IsControlledBy(o, pvc) || o.GetDeletionTimestamp() != nil {
			continue
		}
		uid := o.GetUID()
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", o, key.Name, err)
		}
		stopped = true
	}
	if stopped {
		r.Recorder.Event(pvc, corev1.EventTypeNormal, "VolumeServerStopped", why+": its volume server is stopped; the files stay")
	}
	return nil
}
