package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestGeneratedRolesSuffice (issue 14 item 4): the namespaced install (kubectl kustomize
// manifests/namespaced) is applied to the apiserver as a user would, RBAC included, and each
// operator runs as its service account with the install's own arguments: with exactly the rules
// controller-gen generated for it, granted only in the watched namespace (and leader election in
// its own), it does its work there, each on its success path against real servers: the etcd
// operator creates a cluster's Services, budget, volume and pod; the backup operator reads the
// credentials Secret, backs up a real etcd into a MinIO bucket (Completed, with the stored
// object's sha256) and records a schedule's state; the restore operator reads that EtcdBackup,
// verifies the object, and restores it into a new cluster: it creates the EtcdCluster from its
// template and the seed pod (which never runs: envtest has no kubelet). Nothing is forbidden,
// and the secure metrics endpoint works with the install's cluster-wide review rules. Without
// the object stores' env (OBJSTORE_*) the test skips, or fails under OBJSTORES_REQUIRED=1.
func TestGeneratedRolesSuffice(t *testing.T) {
	const opsNS, watched = "etcd-operator-system", "etcd-clusters" // the overlay's names
	bucket := storagetest.NewS3Bucket(t)
	etcd := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, etcd.Client(t), "/k/", 100, 256)
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: watched}}) // the user's
	deployments := applyNamespacedInstallRBAC(t)
	// The tenant's objects.
	create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 1,
		Pod: &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "aws"}, Data: bucket.Secret})
	create(t, &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "once"},
		Spec: etcdv1beta2.BackupSpec{EtcdEndpoints: []string{etcd.Endpoint}, StorageType: bucket.Type, BackupSource: bucket.Source("db/once.backup", "aws")}})
	create(t, &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "nightly"},
		Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "0 3 * * *", BackupTemplate: etcdv1beta2.BackupTemplateSpec{
			Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: bucket.Type, BackupSource: bucket.Source("db/nightly", "aws")}}}})
	// Backups to a claim: the backup operator runs the claim's server (Pod, Service, Secret).
	create(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "backups"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	create(t, &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "to-volume"},
		Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "0 3 * * *", BackupTemplate: etcdv1beta2.BackupTemplateSpec{
			Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: etcdv1beta2.BackupStorageTypePVC,
				BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCSource{ClaimName: "backups", Path: "db/nightly"}}}}}})
	create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "drill"},
		Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "drill"}, ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "db"},
			BackupRef: &etcdv1beta2.LocalObjectReference{Name: "once"}}})

	logs := map[string]*strings.Builder{}
	for _, binary := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		// The Deployment's arguments, but ports of our own (three on one host) and what the pod
		// would get from the downward API.
		var args []string
		for _, a := range deployments[binary] {
			if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") {
				args = append(args, a)
			}
		}
		args = append(args, "--leader-election-namespace="+opsNS)
		switch binary {
		case "backup-operator":
			// The test's etcd is outside the namespace: the administrator lists it.
			args = append(args, "--allowed-etcd-endpoints="+strings.TrimPrefix(etcd.Endpoint, "http://"),
				"--volume-server-image=etcd-operator:dev") // not in a pod: no image of its own
		case "restore-operator", "etcd-operator":
			// Both run the restore agent's image: the restore operator in its check pod, the
			// etcd operator in the members it restores.
			args = append(args, "--seed-agent-image=etcd-operator:dev")
		}
		op := startOperator(t, binary, serviceAccountKubeconfig(t, opsNS, binary), args...)
		logs[binary] = op.logs
		waitFor(t, binary+"'s Lease", func(ctx context.Context) error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: opsNS, Name: binary + ".etcd.database.coreos.com"}, &coordinationv1.Lease{})
		})
		if binary == "etcd-operator" {
			// --metrics-secure with the install's review rules: the operator's own token may not
			// read /metrics (it is no metrics reader), and the answer is 403, not 500. The
			// endpoint may start listening a moment after the probes and the Lease.
			token := serviceAccountToken(t, opsNS, binary)
			waitFor(t, binary+"'s secure metrics endpoint to answer", func(ctx context.Context) error {
				code, body := get(ctx, t, "https://"+op.metrics+"/metrics", token)
				if code == 0 {
					return errors.New(body)
				}
				if code != 403 {
					t.Errorf("secure metrics with the install's RBAC: HTTP %d, want 403: %.200s", code, body)
				}
				return nil
			})
		}
	}

	// The etcd operator made the cluster's objects and recorded its state.
	for _, o := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-client"}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}}} {
		waitFor(t, fmt.Sprintf("%T %s", o, o.GetName()), func(ctx context.Context) error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: watched, Name: o.GetName()}, o)
		})
	}
	waitCondition(t, &etcdv1beta2.EtcdCluster{}, watched, "db")
	// The backup operator read the Secret, backed the etcd up into the bucket and recorded the
	// schedule's state.
	backup := waitBackupCompleted(t, watched, "once")
	if sum := storedSHA256(t, backup); sum != backup.Status.SHA256 {
		t.Errorf("EtcdBackup once: status.sha256 %s, stored object's %s", backup.Status.SHA256, sum)
	}
	waitCondition(t, &etcdv1beta2.EtcdBackupSchedule{}, watched, "nightly")
	// The restore operator read the backup and verified it, then created the cluster; the etcd
	// operator created its restored members' pods, controlled by the cluster.
	restore := &etcdv1beta2.EtcdRestore{}
	waitFor(t, "EtcdRestore drill's backup to verify", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: watched, Name: "drill"}, restore); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(restore.Status.Conditions, etcdv1beta2.RestoreConditionBackupVerified) {
			return fmt.Errorf("phase %s, conditions %+v", restore.Status.Phase, restore.Status.Conditions)
		}
		return nil
	})
	if restore.Status.BackupSHA256 != backup.Status.SHA256 {
		t.Errorf("EtcdRestore drill verified sha256 %s, the backup's is %s", restore.Status.BackupSHA256, backup.Status.SHA256)
	}
	for _, o := range []client.Object{&corev1.Secret{}, &corev1.Service{}, &corev1.Pod{}} {
		name := backupvolume.Name("backups")
		waitFor(t, fmt.Sprintf("the volume server's %T %s", o, name), func(ctx context.Context) error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: watched, Name: name}, o)
		})
	}
	waitSeedPod(t, watched, "drill")
	waitCondition(t, restore, watched, "drill")
	for b, l := range logs {
		if strings.Contains(strings.ToLower(l.String()), "forbidden") {
			t.Errorf("%s was forbidden something with its generated role:\n%s", b, l.String())
		}
	}
}

// waitCondition waits until obj has a Ready condition for its current generation.
func waitCondition(t *testing.T, obj client.Object, ns, name string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%T %s/%s to record its state", obj, ns, name), func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(conditionsOf(obj), etcdv1beta2.ConditionReady); c == nil || c.Reason == "" {
			return fmt.Errorf("Ready: %+v", c)
		}
		return nil
	})
}

// applyNamespacedInstallRBAC renders manifests/namespaced with the built kubectl, creates its
// namespaces, service accounts and RBAC objects, and returns the Deployments' arguments by name.
func applyNamespacedInstallRBAC(t *testing.T) map[string][]string {
	t.Helper()
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", filepath.Join(testutil.RepoRoot(), "manifests", "namespaced")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize manifests/namespaced: %v", err)
	}
	args := map[string][]string{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			create(t, u)
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			a, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			args[u.GetName()] = a
		}
	}
	return args
}

// serviceAccountToken returns a token of service account ns/name.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(t.Context(), sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as service account ns/name.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: serviceAccountToken(t, ns, name)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
