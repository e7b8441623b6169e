package crdvalidation

import "testing"

// TestPVCAdmission: storageType PVC takes a pvc block with a claim name of this namespace
// (a Kubernetes name) and a relative path, in every place a storage block goes.
func TestPVCAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "backup to a claim", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: etcd-backups, path: team/etcd.backup}")},
		{name: "encrypted backup to a claim", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: etcd-backups, path: k}\n  encryption: {secretName: age}")},
		{name: "restore from a claim", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: PVC\n  pvc: {claimName: etcd-backups, path: team/etcd.backup}")},
		{name: "cluster restored from a claim's newest backup", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: PVC, pvc: {claimName: etcd-backups, path: team/nightly}, backupSelection: Newest}}}")},
		{name: "cluster: PVC without pvc block", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: PVC, s3: {path: b/k}}}}"), want: "storageType PVC needs the pvc block"},
		{name: "schedule to a claim", manifest: pvcSchedule("{claimName: etcd-backups, path: team/nightly}")},
		{name: "backup: PVC without pvc block", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  s3: {path: b/k}"), want: "storageType PVC needs the pvc block"},
		{name: "backup: pvc beside s3", manifest: backup("etcdCluster: {name: c}\n  storageType: S3\n  s3: {path: b/k}\n  pvc: {claimName: c, path: k}"), want: "set only one of s3, abs, gcs, oss and pvc"},
		{name: "backup: pvc without claim", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {path: k}"), want: "spec.pvc.claimName: Required value"},
		{name: "backup: pvc without path", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: c}"), want: "spec.pvc.path: Required value"},
		{name: "backup: claim that is no Kubernetes name", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: Backups_1, path: k}"), want: "spec.pvc.claimName"},
		{name: "backup: absolute path", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: c, path: /etc/passwd}"), want: "path is relative to the volume's root"},
		{name: "backup: path out of the volume", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: c, path: a/../../etc}"), want: "must not have '.' or '..' segments"},
		{name: "backup: path with an empty segment", manifest: backup("etcdCluster: {name: c}\n  storageType: PVC\n  pvc: {claimName: c, path: a//b}"), want: "must not have '.' or '..' segments"},
		{name: "restore: PVC without pvc block", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: PVC"), want: "backupStorageType PVC needs the pvc block"},
		{name: "restore: pvc without storage type", manifest: restore("etcdCluster: {name: c}\n  backupRef: {name: b}\n  pvc: {claimName: c, path: k}"), want: "s3, abs, gcs, oss and pvc go with backupStorageType"},
		{name: "schedule: template path ending in '/'", manifest: pvcSchedule("{claimName: c, path: team/}"), want: "path is relative to the volume's root"},
	})
}

// pvcSchedule is a schedule whose template writes to a claim with the given pvc block.
func pvcSchedule(block string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackupSchedule\nmetadata:\n  name: s\nspec:\n  schedule: \"*/5 * * * *\"" +
		"\n  backupTemplate:\n    spec:\n      etcdCluster: {name: c}\n      storageType: PVC\n      pvc: " + block + "\n"
}
