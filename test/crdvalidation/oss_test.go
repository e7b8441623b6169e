package crdvalidation

import "testing"

// The manifests of coreos/etcd-operator's OSS guide (doc/user/oss_backup.md on its master
// branch, after v0.9.4), the backup's elided backupPolicy filled in as in its periodic example.
const (
	coreosBackupOSS = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackup
metadata:
  name: etcd-cluster-with-oss-backup
spec:
  backupPolicy:
    backupIntervalInSecond: 125
    maxBackups: 4
  etcdEndpoints:
    - "http://example-etcd-cluster-client:2379"
  storageType: OSS
  oss:
    endpoint: http://oss-cn-hangzhou.aliyuncs.com
    ossSecret: my-oss-credentials
    path: my-etcd-backups-bucket/etcd.backup
`
	coreosRestoreOSS = `
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdRestore"
metadata:
  name: example-etcd-cluster
spec:
  etcdCluster:
    name: example-etcd-cluster
  backupStorageType: OSS
  oss:
    path: my-etcd-backups-bucket/etcd.backup
    ossSecret: my-oss-credentials
    endpoint: http://oss-cn-hangzhou.aliyuncs.com
`
)

// TestOSSAdmission: coreos OSS manifests are admitted; an OSS storage type without its oss
// block, an oss block without ossSecret (there is no ambient OSS identity) or beside another
// block is refused, in every kind that holds a storage block.
func TestOSSAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "coreos OSS backup", manifest: coreosBackupOSS},
		{name: "coreos OSS restore", manifest: coreosRestoreOSS},
		{name: "OSS without endpoint", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: b/k, ossSecret: oss}")},
		{name: "OSS with endpointCA", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: b/k, ossSecret: oss, endpoint: \"https://minio:9000\", endpointCA: {name: ca}}")},
		{name: "OSS schedule template", manifest: ossSchedule("{path: b/prefix, ossSecret: oss}")},
		{name: "backup: OSS without oss block", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  s3: {path: b/k}"), want: "storageType OSS needs the oss block"},
		{name: "backup: OSS without ossSecret", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: b/k}"), want: "spec.oss.ossSecret: Required value"},
		{name: "backup: empty ossSecret", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: b/k, ossSecret: \"\"}"), want: "spec.oss.ossSecret"},
		{name: "backup: oss without path", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {ossSecret: oss}"), want: "the storage block needs a path"},
		{name: "backup: oss path without key", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: bucket, ossSecret: oss}"), want: "path must be <bucket>/<key>"},
		{name: "backup: oss beside s3", manifest: backup("etcdCluster: {name: c}\n  storageType: S3\n  s3: {path: b/k}\n  oss: {path: b/k, ossSecret: oss}"), want: "set only one of s3, abs, gcs, oss and pvc"},
		{name: "backup: oss endpoint with credentials", manifest: backup("etcdCluster: {name: c}\n  storageType: OSS\n  oss: {path: b/k, ossSecret: oss, endpoint: \"http://id:secret@oss-cn-hangzhou.aliyuncs.com\"}"), want: "endpoint must not carry credentials"},
		{name: "restore: OSS without oss block", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: OSS"), want: "backupStorageType OSS needs the oss block"},
		{name: "restore: OSS without ossSecret", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: OSS\n  oss: {path: b/k}"), want: "spec.oss.ossSecret: Required value"},
		{name: "restore: oss without storage type", manifest: restore("etcdCluster: {name: c}\n  backupRef: {name: b}\n  oss: {path: b/k, ossSecret: oss}"), want: "s3, abs, gcs, oss and pvc go with backupStorageType"},
		{name: "schedule: OSS template without ossSecret", manifest: ossSchedule("{path: b/prefix}"), want: "ossSecret: Required value"},
	})
}

// ossSchedule is a schedule whose template writes to OSS with the given oss block.
func ossSchedule(block string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackupSchedule\nmetadata:\n  name: s\nspec:\n  schedule: \"*/5 * * * *\"" +
		"\n  backupTemplate:\n    spec:\n      etcdCluster: {name: c}\n      storageType: OSS\n      oss: " + block + "\n"
}
