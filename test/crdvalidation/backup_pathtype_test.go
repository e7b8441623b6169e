package crdvalidation

import "testing"

// TestEtcdBackupPathTypeAdmission covers spec.pathType, added for scheduled backups.
func TestEtcdBackupPathTypeAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "pathType Prefix", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  pathType: Prefix\n  s3: {path: b/k}")},
		{name: "pathType Key", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  pathType: Key\n  s3: {path: b/k}")},
		{name: "unknown pathType", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  pathType: Directory\n  s3: {path: b/k}"), want: `Unsupported value: "Directory"`},
		{name: "schedule template with pathType", manifest: scheduleWithPolicy("pathType: Prefix")},
	})
}
