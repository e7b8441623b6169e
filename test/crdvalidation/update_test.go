package crdvalidation

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// updateCase creates manifest, applies mutate to the stored object and updates it.
type updateCase struct {
	name     string
	manifest string
	mutate   func(t *testing.T, obj *unstructured.Unstructured)
	want     string // "" = accepted
}

func set(value any, fields ...string) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		if err := unstructured.SetNestedField(obj.Object, value, fields...); err != nil {
			t.Fatalf("setting %v: %v", fields, err)
		}
	}
}

func unset(fields ...string) func(*testing.T, *unstructured.Unstructured) {
	return func(_ *testing.T, obj *unstructured.Unstructured) {
		unstructured.RemoveNestedField(obj.Object, fields...)
	}
}

// both applies two mutations in one update.
func both(a, b func(*testing.T, *unstructured.Unstructured)) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		a(t, obj)
		b(t, obj)
	}
}

// withVolumes is a cluster whose members keep their data on volumes.
const withVolumes = "size: 3\n  pod:\n    persistentVolumeClaimSpec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}"

func TestUpdateRules(t *testing.T) {
	cases := []updateCase{
		{name: "scale a cluster", manifest: coreosCluster, mutate: set(int64(5), "spec", "size")},
		{name: "upgrade 3.5 to 3.6", manifest: cluster("size: 3\n  version: 3.5.21"), mutate: set("3.6.16", "spec", "version")},
		{name: "downgrade 3.6 to 3.5", manifest: coreosCluster, mutate: set("3.5.35", "spec", "version")},
		{name: "downgrade 3.6 below 3.5.26", manifest: coreosCluster, mutate: set("3.5.21", "spec", "version"), want: "downgrades to etcd 3.5.26 or newer only"},
		{name: "downgrade 3.6 to 3.5.9", manifest: coreosCluster, mutate: set("v3.5.9", "spec", "version"), want: "downgrades to etcd 3.5.26 or newer only"},
		{name: "pause a cluster", manifest: coreosCluster, mutate: set(true, "spec", "paused")},
		{name: "change bootstrap", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r1, seedMember: c-seed}}"),
			mutate: set("r2", "spec", "bootstrap", "restore", "restoreName"), want: "bootstrap is immutable once set"},
		{name: "add bootstrap to a running cluster", manifest: coreosCluster,
			mutate: set(map[string]any{"restore": map[string]any{"source": map[string]any{"storageType": "S3", "s3": map[string]any{"path": "bkt/etcd.backup", "awsSecret": "aws"}}}}, "spec", "bootstrap"),
			want:   "bootstrap is set only when the cluster is created"},
		{name: "remove bootstrap", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r1, seedMember: c-seed}}"), mutate: unset("spec", "bootstrap")},
		{name: "change a backup's path", manifest: coreosBackupS3, mutate: set("other/etcd.backup", "spec", "s3", "path"), want: "an EtcdBackup's spec is immutable"},
		{name: "make a backup periodic", manifest: coreosBackupS3, mutate: set(int64(60), "spec", "backupPolicy", "backupIntervalInSecond"), want: "an EtcdBackup's spec is immutable"},
		{name: "backup labels are not spec", manifest: coreosBackupS3, mutate: set("x", "metadata", "labels", "team")},
		{name: "change a restore's source", manifest: coreosRestoreS3, mutate: set("mybucket/other", "spec", "s3", "path"), want: "an EtcdRestore's spec is immutable"},
		{name: "edit a schedule", manifest: validSchedule, mutate: set("*/1 * * * *", "spec", "schedule")},
		{name: "move TLS.auto to cert-manager", manifest: cluster("size: 3\n  TLS:\n    auto: {}"),
			mutate: set(map[string]any{"name": "ca"}, "spec", "TLS", "auto", "issuerRef"), want: "TLS.auto.issuerRef cannot be added or removed"},
		{name: "move TLS.auto off cert-manager", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {name: ca}}"),
			mutate: set(map[string]any{}, "spec", "TLS", "auto"), want: "TLS.auto.issuerRef cannot be added or removed"},
		{name: "change the issuer", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {name: ca}}"),
			mutate: set("other-ca", "spec", "TLS", "auto", "issuerRef", "name"), want: "TLS.auto.issuerRef is immutable"},
		{name: "add recovery in the update that removes the volumes", manifest: cluster(withVolumes),
			mutate: both(unset("spec", "pod", "persistentVolumeClaimSpec"), set(map[string]any{"backupScheduleName": "nightly"}, "spec", "recovery")),
			want:   "recovery cannot be set in the update that removes pod.persistentVolumeClaimSpec"},
		{name: "remove the volumes alone", manifest: cluster(withVolumes), mutate: unset("spec", "pod", "persistentVolumeClaimSpec")},
		{name: "add recovery to a cluster without volumes", manifest: coreosCluster, mutate: set(map[string]any{"backupScheduleName": "nightly"}, "spec", "recovery")},
		{name: "drop recovery and add volumes in one update", manifest: cluster("size: 3\n  recovery: {backupScheduleName: nightly}"),
			mutate: both(unset("spec", "recovery"), set(map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}, "spec", "pod", "persistentVolumeClaimSpec"))},
		{name: "renew cert-manager certificates sooner", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {name: ca}}"),
			mutate: set("720h", "spec", "TLS", "auto", "renewBefore")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			obj := parse(t, tc.manifest, newNamespace(t))
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating the original object: %v", err)
			}
			tc.mutate(t, obj)
			expectResult(t, env.Client.Update(ctx, obj), tc.want)
		})
	}
}
