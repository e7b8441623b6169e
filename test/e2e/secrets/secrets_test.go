//go:build e2e

// Package secrets checks that credentials never leave the Secrets they are in: after backups
// and a restore through every provider, nothing the operators emitted (logs, events, statuses,
// the seed pod, metrics) contains a credential value.
package secrets

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// operators are the Deployments hack/deploy.sh installs, each serving metrics on 8443 (HTTPS).
var operators = []string{"etcd-operator", "backup-operator", "restore-operator"}

// TestNoCredentialsInOutput: one backup per provider (S3, GCS, ABS, each with its credentials
// Secret) and a restore from each into a new name (the seed pod mounts the Secret), then every
// operator's log, the events, every object of the four kinds and the namespace's pods as YAML,
// and every operator's /metrics are searched for each credential value.
func TestNoCredentialsInOutput(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "secrets")
	ctx := t.Context()

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	f.WaitClusterAvailable(t, ns, "db", 1, 3*time.Minute)
	framework.PutDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, "db")), "/k/", 0, 500)

	var values []string // every credential value a Secret holds
	for _, typ := range framework.StorageTypes {
		b := stores.NewBucket(t, typ)
		name := strings.ToLower(string(typ))
		b.CreateSecret(t, f, ns, name+"-creds")
		for k, v := range b.SecretData() {
			values = append(values, credentialValues(k, string(v))...)
		}
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: typ, BackupSource: b.Source("db/etcd.backup", name+"-creds")},
		})
		f.WaitBackupCompleted(t, ns, name, 3*time.Minute)
		f.Create(t, &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-" + name},
			Spec: etcdv1beta2.RestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "db-" + name},
				ClusterTemplate:   &etcdv1beta2.EtcdClusterRef{Name: "db"},
				BackupStorageType: typ,
				BackupSource:      b.Source("db/etcd.backup", name+"-creds"),
			},
		})
	}
	for _, typ := range framework.StorageTypes {
		f.WaitRestoreSucceeded(t, ns, "restore-"+strings.ToLower(string(typ)), 5*time.Minute)
	}
	if len(values) < 3 {
		t.Fatalf("found only %d credential values to look for: %q", len(values), values)
	}

	outputs := map[string]string{}
	kubectl := func(what string, args ...string) {
		out, errOut, err := f.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("%s: %v: %s", what, err, errOut)
		}
		outputs[what] = out
	}
	for _, op := range operators {
		kubectl(op+" log", "-n", framework.OperatorNamespace, "logs", "deployment/"+op, "--all-containers", "--tail=-1")
		outputs[op+" metrics"] = metrics(t, f, op)
	}
	kubectl("events", "get", "events", "-A", "-o", "yaml")
	kubectl("objects", "get", "etcdclusters,etcdbackups,etcdbackupschedules,etcdrestores", "-A", "-o", "yaml")
	kubectl("pods of "+ns, "-n", ns, "get", "pods", "-o", "yaml")
	for what, out := range outputs {
		for _, v := range values {
			if strings.Contains(out, v) {
				t.Errorf("the %s contains a credential value (%d characters, starting %q)", what, len(v), v[:4])
			}
		}
		t.Logf("%s: %d bytes searched", what, len(out))
	}
}

// credentialValues are the secret parts of a credentials Secret's key: every value of an INI
// file (aws credentials), or the value itself.
func credentialValues(key, val string) []string {
	if key != etcdv1beta2.AWSSecretCredentialsFileName {
		if key == etcdv1beta2.AWSSecretConfigFileName || key == etcdv1beta2.AzureSecretStorageAccount {
			return nil // a region and an account name are not secrets
		}
		return []string{strings.TrimSpace(val)}
	}
	var out []string
	for _, line := range strings.Split(val, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.Contains(k, "secret") {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// metrics reads an operator's secure /metrics through a port-forward, as Prometheus would: with
// the token of a service account bound to the metrics-reader ClusterRole.
func metrics(t *testing.T, f *framework.Framework, deployment string) string {
	t.Helper()
	addr := f.PortForward(t, framework.OperatorNamespace, "deployment/"+deployment, 8443)
	token := f.MetricsToken(t, framework.OperatorNamespace, framework.MetricsReaderRole)
	var body string
	framework.Eventually(t, time.Minute, "metrics of "+deployment, func(ctx context.Context) (bool, error) {
		var err error
		body, err = f.ScrapeMetrics(ctx, addr, token)
		return err == nil, err
	})
	return body
}
