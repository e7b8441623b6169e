package crdvalidation

import (
	"context"
	"strings"
	"testing"
)

// The manifests of coreos/etcd-operator users (DESIGN.md), with the version set to a supported
// one, and the documented variants of each kind.
const (
	coreosCluster = `
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "example-etcd-cluster"
spec:
  size: 3
  version: "3.6.16"
`
	coreosBackupS3 = `
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdBackup"
metadata:
  name: example-etcd-cluster-backup
spec:
  etcdEndpoints: ["http://example-etcd-cluster-client:2379"]
  storageType: S3
  s3:
    path: mybucket/etcd.backup
    awsSecret: aws
`
	coreosRestoreS3 = `
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdRestore"
metadata:
  name: example-etcd-cluster
spec:
  etcdCluster:
    name: example-etcd-cluster
  backupStorageType: S3
  s3:
    path: mybucket/etcd.backup
    awsSecret: aws
`
	validSchedule = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdBackupSchedule
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Berlin
  backupTemplate:
    spec:
      etcdCluster:
        name: example-etcd-cluster
      storageType: S3
      s3:
        path: mybucket/nightly
        awsSecret: aws
  retention:
    maxBackups: 7
    maxAge: 720h
`
)

type createCase struct {
	name     string
	manifest string
	want     string // "" = accepted; otherwise a fragment of the rejection message
}

func runCreateCases(t *testing.T, cases []createCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			err := env.Client.Create(context.Background(), parse(t, tc.manifest, ns))
			expectResult(t, err, tc.want)
		})
	}
}

func TestEtcdClusterAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "coreos manifest", manifest: coreosCluster},
		{name: "3.5 with v prefix", manifest: cluster("size: 1\n  version: v3.5.21")},
		{name: "no version defaults", manifest: cluster("size: 5")},
		{name: "full pod policy and TLS", manifest: cluster(`size: 3
  repository: registry.example.com/etcd
  pod:
    labels: {team: storage}
    annotations: {note: x}
    nodeSelector: {disk: ssd}
    antiAffinity: true
    resources: {requests: {cpu: 100m, memory: 128Mi}}
    tolerations: [{key: dedicated, operator: Exists}]
    etcdEnv: [{name: ETCD_QUOTA_BACKEND_BYTES, value: "4294967296"}]
    persistentVolumeClaimSpec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
    busyboxImage: busybox:1.28.0-glibc
    securityContext: {runAsNonRoot: true, runAsUser: 1000}
    DNSTimeoutInSecond: 60
    ClusterDomain: .cluster.local
  TLS:
    static:
      member: {peerSecret: etcd-peer, serverSecret: etcd-server}
      operatorSecret: etcd-client`)},
		{name: "negative size", manifest: cluster("size: -1"), want: "size must be between 1 and 7"},
		{name: "zero size", manifest: cluster("size: 0"), want: "size must be between 1 and 7"},
		{name: "size above 7", manifest: cluster("size: 9"), want: "size must be between 1 and 7"},
		{name: "missing size", manifest: cluster(`version: "3.6.16"`), want: "spec.size: Required value"},
		{name: "version below 3.5", manifest: cluster("size: 3\n  version: 3.2.13"), want: "versions below 3.5 are end of life"},
		{name: "version 3.4", manifest: cluster("size: 3\n  version: 3.4.27"), want: "etcd 3.4.27 is not supported"},
		{name: "version not yet supported", manifest: cluster("size: 3\n  version: 3.7.0"), want: "etcd 3.7.0 is not supported: this operator runs etcd 3.5.x and 3.6.x"},
		{name: "version not semver", manifest: cluster("size: 3\n  version: latest"), want: "version must be an etcd release version"},
		{name: "reserved pod label app", manifest: cluster("size: 3\n  pod:\n    labels: {app: mine}"), want: "reserved key 'app'"},
		{name: "reserved pod label etcd_", manifest: cluster("size: 3\n  pod:\n    labels: {etcd_cluster: x}"), want: "reserved key 'app' or keys starting with 'etcd_'"},
		{name: "operator secret without server secret", manifest: cluster("size: 3\n  TLS:\n    static:\n      operatorSecret: c"), want: "operatorSecret and TLS.static.member.serverSecret go together"},
		{name: "server secret without operator secret", manifest: cluster("size: 3\n  TLS:\n    static:\n      member: {serverSecret: s}"), want: "go together"},
		{name: "pvc without storage request", manifest: cluster("size: 3\n  pod:\n    persistentVolumeClaimSpec: {accessModes: [ReadWriteOnce]}"), want: "resources.requests.storage is required"},
		{name: "negative DNS timeout", manifest: cluster("size: 3\n  pod:\n    DNSTimeoutInSecond: -5"), want: "DNSTimeoutInSecond"},
		{name: "empty repository", manifest: cluster("size: 3\n  repository: \"\""), want: "spec.repository"},
		{name: "restore bootstrap with members", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r, seedMember: c-0, members: [c-0, c-1, c-2]}}")},
		{name: "restore members without the seed", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r, seedMember: c-0, members: [c-1, c-2]}}"), want: "members, when set, must include seedMember"},
		{name: "restore members repeated", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r, seedMember: c-0, members: [c-0, c-0]}}"), want: "Duplicate value"},
		{name: "restore from a source", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/ns/c/x.db, awsSecret: aws}, sha256: " + strings.Repeat("ab", 32) + ", size: 20480, revision: 42}}}")},
		{name: "restore with neither source nor restore", manifest: cluster("size: 3\n  bootstrap: {restore: {seedMember: c-0}}"), want: "bootstrap.restore needs source"},
		{name: "restore without source needs a seed", manifest: cluster("size: 3\n  bootstrap: {restore: {restoreName: r}}"), want: "seedMember is required without source"},
		{name: "restore source without its block", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: GCS, s3: {path: bkt/x.db, awsSecret: aws}}}}"), want: "storageType GCS needs the gcs block"},
		{name: "restore the newest backup under a prefix", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/etcd/backups, awsSecret: aws}, backupSelection: Newest, of: {namespace: prod, name: main, clusterID: 8e9e05c52164694d}}}}")},
		{name: "restore source of without Newest", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/etcd/backups, awsSecret: aws}, of: {name: main}}}}"), want: "it needs backupSelection Newest"},
		{name: "restore source Newest with a pinned sha256", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/etcd/backups, awsSecret: aws}, backupSelection: Newest, sha256: " + strings.Repeat("ab", 32) + "}}}"), want: "sha256, size and revision pin one backup object"},
		{name: "restore source of with a bad cluster ID", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/etcd/backups, awsSecret: aws}, backupSelection: Newest, of: {clusterID: XYZ}}}}"), want: "clusterID"},
		{name: "restore source bad sha256", manifest: cluster("size: 3\n  bootstrap: {restore: {source: {storageType: S3, s3: {path: bkt/x.db, awsSecret: aws}, sha256: XYZ}}}"), want: "sha256"},
	})
}

func TestEtcdBackupAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "coreos S3 manifest", manifest: coreosBackupS3},
		{name: "coreos periodic", manifest: backup(`etcdEndpoints: ["https://c-client:2379"]
  storageType: S3
  clientTLSSecret: etcd-client
  backupPolicy: {backupIntervalInSecond: 120, maxBackups: 5, timeoutInSecond: 600}
  s3: {path: mybucket/etcd.backup, awsSecret: aws, endpoint: "http://minio:9000", forcePathStyle: true}`)},
		{name: "ABS", manifest: backup("etcdEndpoints: [\"http://c-client:2379\"]\n  storageType: ABS\n  abs: {path: container/etcd.backup, absSecret: abs}")},
		{name: "GCS by cluster name", manifest: backup("etcdCluster: {name: c}\n  storageType: GCS\n  gcs: {path: bucket/etcd.backup, gcpSecret: gcp}")},
		{name: "missing storageType", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  s3: {path: b/k}"), want: "spec.storageType: Required value"},
		{name: "unknown storageType", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: FTP"), want: `Unsupported value: "FTP"`},
		{name: "S3 without s3 block", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3"), want: "storageType S3 needs the s3 block"},
		{name: "ABS without abs block", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: ABS\n  s3: {path: b/k}"), want: "storageType ABS needs the abs block"},
		{name: "two sources", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {path: b/k}\n  gcs: {path: b/k}"), want: "set only one of s3, abs, gcs, oss and pvc"},
		{name: "empty path", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {path: \"\"}"), want: "path must be <bucket>/<key>"},
		{name: "path without key", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: GCS\n  gcs: {path: mybucket}"), want: "path must be <bucket>/<object>"},
		{name: "no path", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {awsSecret: aws}"), want: "the storage block needs a path"},
		{name: "no cluster", manifest: backup("storageType: S3\n  s3: {path: b/k}"), want: "set exactly one of etcdEndpoints"},
		{name: "endpoints and cluster", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  etcdCluster: {name: c}\n  storageType: S3\n  s3: {path: b/k}"), want: "set exactly one of etcdEndpoints"},
		{name: "endpoint without scheme", manifest: backup("etcdEndpoints: [\"c-client:2379\"]\n  storageType: S3\n  s3: {path: b/k}"), want: "each etcd endpoint must be a URL"},
		{name: "negative interval", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {path: b/k}\n  backupPolicy: {backupIntervalInSecond: -1}"), want: "backupIntervalInSecond"},
		{name: "negative maxBackups", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {path: b/k}\n  backupPolicy: {maxBackups: -2}"), want: "maxBackups"},
		{name: "bad s3 endpoint", manifest: backup("etcdEndpoints: [\"http://c:2379\"]\n  storageType: S3\n  s3: {path: b/k, endpoint: minio:9000}"), want: "endpoint must be an http:// or https:// URL"},
	})
}

func TestEtcdRestoreAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "coreos S3 manifest", manifest: coreosRestoreS3},
		{name: "from an EtcdBackup into a drill cluster", manifest: restore("etcdCluster: {name: drill}\n  clusterTemplate: {name: prod}\n  backupRef: {name: nightly-1}")},
		{name: "newest under a prefix", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: GCS\n  backupSelection: Newest\n  gcs: {path: bucket/nightly}")},
		{name: "from a schedule", manifest: restore("etcdCluster: {name: c}\n  backupScheduleRef: {name: nightly}")},
		{name: "no cluster", manifest: restore("backupStorageType: S3\n  s3: {path: b/k}"), want: "spec.etcdCluster: Required value"},
		{name: "no backup", manifest: restore("etcdCluster: {name: c}"), want: "name the backup in exactly one way"},
		{name: "storage and backupRef", manifest: restore("etcdCluster: {name: c}\n  backupRef: {name: b}\n  backupStorageType: S3\n  s3: {path: b/k}"), want: "name the backup in exactly one way"},
		{name: "S3 without s3 block", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: S3"), want: "backupStorageType S3 needs the s3 block"},
		{name: "block without storage type", manifest: restore("etcdCluster: {name: c}\n  backupRef: {name: b}\n  s3: {path: b/k}"), want: "s3, abs, gcs, oss and pvc go with backupStorageType"},
		{name: "template is the target", manifest: restore("etcdCluster: {name: c}\n  clusterTemplate: {name: c}\n  backupRef: {name: b}"), want: "clusterTemplate must name another cluster"},
		{name: "unknown selection", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: S3\n  backupSelection: Oldest\n  s3: {path: b/k}"), want: `Unsupported value: "Oldest"`},
	})
}

func TestEtcdBackupScheduleAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "valid", manifest: validSchedule},
		{name: "descriptor", manifest: schedule(`"@hourly"`, "")},
		{name: "not cron", manifest: schedule(`"every minute"`, ""), want: "schedule must be a 5-field cron expression"},
		{name: "six fields", manifest: schedule(`"0 0 * * * *"`, ""), want: "schedule must be a 5-field cron expression"},
		{name: "TZ in schedule", manifest: schedule(`"CRON_TZ=UTC 0 * * * *"`, ""), want: "set the time zone in timeZone"},
		{name: "unknown concurrency policy", manifest: schedule(`"0 * * * *"`, "concurrencyPolicy: Sometimes"), want: `Unsupported value: "Sometimes"`},
		{name: "negative history limit", manifest: schedule(`"0 * * * *"`, "successfulBackupsHistoryLimit: -1"), want: "successfulBackupsHistoryLimit"},
		{name: "negative deadline", manifest: schedule(`"0 * * * *"`, "startingDeadlineSeconds: -10"), want: "startingDeadlineSeconds"},
		{name: "zero maxBackups", manifest: schedule(`"0 * * * *"`, "retention: {maxBackups: 0}"), want: "maxBackups"},
		{name: "bad maxAge", manifest: schedule(`"0 * * * *"`, "retention: {maxAge: 30d}"), want: "maxAge must be a positive duration"},
		{name: "empty retention", manifest: schedule(`"0 * * * *"`, "retention: {}"), want: "retention needs maxBackups, maxAge or both"},
		{name: "periodic template", manifest: scheduleWithPolicy("backupPolicy: {backupIntervalInSecond: 60}"), want: "backupPolicy may set only timeoutInSecond"},
		{name: "template timeout is fine", manifest: scheduleWithPolicy("backupPolicy: {timeoutInSecond: 900}")},
		{name: "template without source", manifest: scheduleWithPolicy("gcs: {path: b/k}"), want: "set only one of s3, abs, gcs, oss and pvc"},
	})
}

func cluster(spec string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: c\nspec:\n  " + spec + "\n"
}

func backup(spec string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackup\nmetadata:\n  name: b\nspec:\n  " + spec + "\n"
}

func restore(spec string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdRestore\nmetadata:\n  name: r\nspec:\n  " + spec + "\n"
}

func schedule(cron, extra string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackupSchedule\nmetadata:\n  name: s\nspec:\n  schedule: " + cron +
		"\n  backupTemplate:\n    spec:\n      etcdCluster: {name: c}\n      storageType: S3\n      s3: {path: b/prefix}\n  " + extra + "\n"
}

func scheduleWithPolicy(templateExtra string) string {
	return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackupSchedule\nmetadata:\n  name: s\nspec:\n  schedule: \"*/5 * * * *\"" +
		"\n  backupTemplate:\n    spec:\n      etcdCluster: {name: c}\n      storageType: S3\n      s3: {path: b/prefix}\n      " + templateExtra + "\n"
}
