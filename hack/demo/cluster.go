//go:build e2e

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	scheduleName = "every-minute"
	secretName   = "demo-s3"
	backupPrefix = "demo/etcd.backup"
)

// reset deletes what a previous run left: the namespace (and so its cluster, pods, volumes,
// backups and restores) and the objects under demo/ in the bucket.
func (d *demo) reset(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.o.namespace}}
	err := d.f.Client.Delete(ctx, ns, client.PropagationPolicy(metav1.DeletePropagationForeground))
	if err == nil {
		d.info("namespace %s exists from a previous run: deleting it", d.o.namespace)
		next := time.Now().Add(15 * time.Second)
		if err := framework.Poll(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
			err := d.f.Client.Get(ctx, types.NamespacedName{Name: d.o.namespace}, ns)
			if err == nil && time.Now().After(next) {
				d.info("namespace %s still %s (its pods and volumes go first)", d.o.namespace, ns.Status.Phase)
				next = time.Now().Add(15 * time.Second)
			}
			return apierrors.IsNotFound(err), fmt.Errorf("namespace %s still %s (get: %v)", d.o.namespace, ns.Status.Phase, err)
		}); err != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", d.o.namespace, err)
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.o.namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "etcd-operator-demo"}}}
	if err := d.f.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", d.o.namespace, err)
	}
	if d.bucket, err = d.stores.OpenBucket(ctx, etcdv1beta2.BackupStorageTypeS3, d.o.bucket); err != nil {
		return err
	}
	objs, err := d.bucket.Backend().List(ctx, "demo/")
	if err != nil {
		return fmt.Errorf("listing s3://%s/demo/: %w", d.o.bucket, err)
	}
	for _, o := range objs {
		if err := d.bucket.Backend().Delete(ctx, o.Key); err != nil {
			return fmt.Errorf("deleting s3://%s/%s: %w", d.o.bucket, o.Key, err)
		}
	}
	if len(objs) > 0 {
		d.info("deleted %d objects of a previous run from the bucket", len(objs))
	}
	return d.f.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.o.namespace, Name: secretName},
		Data:       d.bucket.SecretData(),
	})
}

func (d *demo) createCluster(ctx context.Context) error {
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.o.namespace, Name: d.o.cluster},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Pod: &etcdv1beta2.PodPolicy{
			PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("512Mi")}},
			},
		}},
	}
	if err := d.f.Client.Create(ctx, c); err != nil {
		return fmt.Errorf("creating EtcdCluster %s/%s: %w", d.o.namespace, d.o.cluster, err)
	}
	return nil
}

func (d *demo) getCluster(ctx context.Context) (*etcdv1beta2.EtcdCluster, error) {
	c := &etcdv1beta2.EtcdCluster{}
	return c, d.f.Client.Get(ctx, types.NamespacedName{Namespace: d.o.namespace, Name: d.o.cluster}, c)
}

// waitClusterAvailable waits until the cluster is Available with 3 ready members, printing its
// phase when it changes.
func (d *demo) waitClusterAvailable(ctx context.Context, timeout time.Duration) error {
	last := ""
	return framework.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		c, err := d.getCluster(ctx)
		if err != nil {
			return false, err
		}
		phase := string(c.Status.Phase)
		if phase == "" {
			phase = "-"
		}
		now := fmt.Sprintf("phase %s, %d/%d members ready", phase, c.Status.ReadyMembers, c.Spec.Size)
		if now != last {
			d.info("cluster: %s", now)
			last = now
		}
		return meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) &&
			c.Status.ReadyMembers == c.Spec.Size, errors.New(now)
	})
}

func (d *demo) clientEndpoint() string {
	return fmt.Sprintf("http://%s:2379", framework.ServiceDNSName(d.o.cluster+"-client", d.o.namespace))
}

// etcdClient connects from the host to the cluster's client Service (cluster DNS, pod routes).
func (d *demo) etcdClient(_ context.Context, endpoints ...string) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		endpoints = []string{d.clientEndpoint()}
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		DialOptions:        []grpc.DialOption{grpc.WithContextDialer(d.f.DialTCP)},
		MaxCallSendMsgSize: 4 << 20, MaxCallRecvMsgSize: 64 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

func currentRevision(ctx context.Context, cli *clientv3.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the cluster's revision: %w", err)
	}
	return resp.Header.Revision, nil
}

func (d *demo) createSchedule(ctx context.Context) error {
	keep := int32(5)
	s := &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.o.namespace, Name: scheduleName},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule:  "*/1 * * * *",
			Retention: &etcdv1beta2.RetentionPolicy{MaxBackups: &keep},
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: d.o.cluster},
				StorageType:  etcdv1beta2.BackupStorageTypeS3,
				BackupSource: d.bucket.Source(backupPrefix, secretName),
			}},
		},
	}
	if d.o.continuous {
		s.Spec.ContinuousCapture = &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To(int32(captureInterval / time.Second))}
	}
	if err := d.f.Client.Create(ctx, s); err != nil {
		return fmt.Errorf("creating EtcdBackupSchedule %s: %w", scheduleName, err)
	}
	return nil
}

// captureInterval is the segment interval of the continuous mode's capture.
const captureInterval = 2 * time.Second

// waitCapturing waits until the schedule's continuous capture runs and returns its status.
func (d *demo) waitCapturing(ctx context.Context, timeout time.Duration) (*etcdv1beta2.CaptureStatus, error) {
	s := &etcdv1beta2.EtcdBackupSchedule{}
	err := framework.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := d.f.Client.Get(ctx, types.NamespacedName{Namespace: d.o.namespace, Name: scheduleName}, s); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing)
		if c == nil || c.Status != metav1.ConditionTrue || s.Status.Capture == nil {
			return false, fmt.Errorf("condition Capturing: %+v", c)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the continuous capture: %w", err)
	}
	return s.Status.Capture, nil
}

// waitScheduledBackup waits for the schedule's first successful EtcdBackup and returns it,
// printing the state of the schedule's backups as it changes; a failed run fails the demo.
func (d *demo) waitScheduledBackup(ctx context.Context, timeout time.Duration) (*etcdv1beta2.EtcdBackup, error) {
	var done *etcdv1beta2.EtcdBackup
	last := ""
	err := framework.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		s := &etcdv1beta2.EtcdBackupSchedule{}
		if err := d.f.Client.Get(ctx, types.NamespacedName{Namespace: d.o.namespace, Name: scheduleName}, s); err != nil {
			return false, err
		}
		list := &etcdv1beta2.EtcdBackupList{}
		if err := d.f.Client.List(ctx, list, client.InNamespace(d.o.namespace)); err != nil {
			return false, err
		}
		var states []string
		for _, b := range list.Items {
			states = append(states, fmt.Sprintf("%s %s", b.Name, b.Status.Phase))
			if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
				return false, fmt.Errorf("scheduled backup %s failed: %s", b.Name, b.Status.Reason)
			}
		}
		now := "next run " + timeOf(s.Status.NextScheduleTime)
		if len(states) > 0 {
			now = strings.Join(states, ", ")
		}
		if now != last {
			d.info("schedule: %s", now)
			last = now
		}
		if s.Status.LastSuccessfulBackup == "" {
			return false, errors.New(now)
		}
		for i := range list.Items {
			if list.Items[i].Name == s.Status.LastSuccessfulBackup {
				done = &list.Items[i]
			}
		}
		return done != nil && done.Status.Phase == etcdv1beta2.BackupPhaseCompleted, errors.New(now)
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the first scheduled backup: %w", err)
	}
	return done, nil
}

func (d *demo) suspendSchedule(ctx context.Context) error {
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := d.f.Client.Get(ctx, types.NamespacedName{Namespace: d.o.namespace, Name: scheduleName}, s); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	suspend := true
	s.Spec.Suspend = &suspend
	return d.f.Client.Patch(ctx, s, patch)
}

// disaster deletes every member pod (no grace) and every volume of the namespace at once, and
// waits until the original volumes are gone. The etcd operator, which brings members back on
// their volumes, may recreate a pod on a volume that is being deleted before it notices the
// deletion; such a pod pins the volume (pvc-protection), so it is deleted again, as often as
// needed: the disaster is that every volume is lost.
func (d *demo) disaster(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := d.f.Client.List(ctx, pods, client.InNamespace(d.o.namespace), client.MatchingLabels{"app": "etcd", "etcd_cluster": d.o.cluster}); err != nil {
		return err
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := d.f.Client.List(ctx, pvcs, client.InNamespace(d.o.namespace)); err != nil {
		return err
	}
	var names []string
	oldPods, oldPVCs := map[types.UID]bool{}, map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		names = append(names, "pod/"+p.Name)
		if err := d.f.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
		oldPods[p.UID] = true
	}
	for i := range pvcs.Items {
		v := &pvcs.Items[i]
		names = append(names, "pvc/"+v.Name)
		if err := d.f.Client.Delete(ctx, v); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting volume %s: %w", v.Name, err)
		}
		oldPVCs[v.UID] = true
	}
	slices.Sort(names)
	d.info("deleted %s", strings.Join(names, " "))
	again := map[types.UID]bool{}
	err := framework.Poll(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := d.f.Client.List(ctx, pvcs, client.InNamespace(d.o.namespace)); err != nil {
			return false, err
		}
		var left []string
		dying := map[string]bool{} // names of the old volumes still there
		for _, v := range pvcs.Items {
			if oldPVCs[v.UID] {
				left = append(left, "pvc/"+v.Name)
				dying[v.Name] = true
			}
		}
		if err := d.f.Client.List(ctx, pods, client.InNamespace(d.o.namespace)); err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if oldPods[p.UID] {
				left = append(left, "pod/"+p.Name)
				continue
			}
			for _, vol := range p.Spec.Volumes {
				if c := vol.PersistentVolumeClaim; c != nil && dying[c.ClaimName] && !again[p.UID] {
					d.info("the etcd operator recreated pod %s on volume %s, which is being deleted: deleting the pod again", p.Name, c.ClaimName)
					if err := d.f.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
						return false, fmt.Errorf("deleting pod %s: %w", p.Name, err)
					}
					again[p.UID] = true
				}
			}
		}
		return len(left) == 0, fmt.Errorf("still there: %v", left)
	})
	d.report.PodsDeletedAgain = len(again)
	return err
}

// restore creates the EtcdRestore and waits for it to succeed or fail, printing its phase and
// condition messages as they change.
func (d *demo) restore(ctx context.Context) (*etcdv1beta2.EtcdRestore, error) {
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.o.namespace, Name: d.o.cluster},
		Spec:       etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: d.o.cluster}},
	}
	if d.o.continuous {
		rs.Spec.PointInTime = &etcdv1beta2.PointInTime{}
	}
	if d.o.restoreFrom == "schedule" {
		rs.Spec.BackupScheduleRef = &etcdv1beta2.LocalObjectReference{Name: scheduleName}
	} else {
		rs.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypeS3
		rs.Spec.BackupSource = d.bucket.Source(strings.TrimPrefix(d.report.BackupPath, d.o.bucket+"/"), secretName)
	}
	if err := d.f.Client.Create(ctx, rs); err != nil {
		return nil, fmt.Errorf("creating EtcdRestore: %w", err)
	}
	seen := map[string]bool{}
	err := framework.Poll(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		if err := d.f.Client.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
			return false, err
		}
		st := rs.Status
		for _, line := range restoreLines(rs) {
			if !seen[line] {
				seen[line] = true
				d.info("restore: %s", line)
			}
		}
		if st.Phase == etcdv1beta2.RestorePhaseFailed {
			return false, fmt.Errorf("EtcdRestore failed: %s", st.Reason)
		}
		return st.Succeeded, fmt.Errorf("phase %s", st.Phase)
	})
	if err != nil {
		return rs, fmt.Errorf("restoring: %w", err)
	}
	return rs, nil
}

// restoreLines is what a human watching the restore wants to see: the phase and each
// condition's status, reason and message.
func restoreLines(rs *etcdv1beta2.EtcdRestore) []string {
	var lines []string
	if rs.Status.Phase != "" {
		lines = append(lines, "phase "+string(rs.Status.Phase))
	}
	for _, c := range rs.Status.Conditions {
		lines = append(lines, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return lines
}

// memberKeyCounts asks each member, on its own (serializable reads), how many keys it holds.
func (d *demo) memberKeyCounts(ctx context.Context) (map[string]int64, error) {
	pods := &corev1.PodList{}
	if err := d.f.Client.List(ctx, pods, client.InNamespace(d.o.namespace), client.MatchingLabels{"app": "etcd", "etcd_cluster": d.o.cluster}); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, p := range pods.Items {
		cli, err := d.etcdClient(ctx, fmt.Sprintf("http://%s:2379", framework.PodDNSName(p.Name, d.o.cluster, d.o.namespace)))
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cli.Get(cctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		cancel()
		_ = cli.Close()
		if err != nil {
			return nil, fmt.Errorf("counting keys on member %s: %w", p.Name, err)
		}
		out[p.Name] = resp.Count
	}
	return out, nil
}

// diagnose prints what to look at after a failure.
func (d *demo) diagnose(ctx context.Context) {
	ns := d.o.namespace
	fmt.Fprintf(os.Stderr, "\nstate of %s:\n", ns)
	for _, args := range [][]string{
		{"-n", ns, "get", "etcdcluster,etcdbackupschedule,etcdbackup,etcdrestore,pods,pvc", "-o", "wide"},
		{"-n", ns, "get", "events", "--sort-by=.lastTimestamp"},
	} {
		out, _, err := d.f.Kubectl(ctx, args...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Fprintln(os.Stderr, out)
	}
	fmt.Fprintf(os.Stderr, "more: kubectl -n %s get etcdrestore -o yaml; kubectl -n %s logs %s-0 -c restore; kubectl -n %s logs deploy/restore-operator\n",
		ns, ns, d.o.cluster, framework.OperatorNamespace)
}

func timeOf(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.TimeOnly)
}
