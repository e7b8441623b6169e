package crdvalidation

import (
	"strings"
	"testing"
)

// Hostile and mistaken input (issue 14 item 6): each class is refused at admission with a message
// that names the field, checked against the real kube-apiserver; the valid near-misses next to
// them must still pass, so the rules are no broader than they say.
//
// Not decidable here, and where it is handled instead:
//   - a cron that never fires (0 0 31 2 *) and unknown time zones that pass the pattern: the
//     schedule controller's InvalidSchedule and InvalidTimeZone conditions, without requeue
//     (TestScheduleInvalid, TestDrillInvalid in internal/controller/etcdbackupschedule);
//   - the syntax of strings inside the corev1 types of spec.pod (toleration keys and values,
//     env names, sysctl names, match expressions): their schema has no maxLength, and a regex
//     over every item of such a list exceeds the CRD's CEL cost budget; the apiserver refuses
//     the member pod and the cluster is Degraded with its message. Label, node selector and
//     annotation keys and values are checked (pod_test.go): map keys cost little to CEL, and
//     the values of labels and nodeSelector have a schema of their own (LabelValue).

// named returns manifest with metadata.name replaced.
func named(manifest, name string) string {
	return strings.Replace(manifest, "\nmetadata:\n  name: c\n", "\nmetadata:\n  name: "+name+"\n", 1)
}

func TestHostileEtcdCluster(t *testing.T) {
	ok3 := cluster("size: 3")
	runCreateCases(t, []createCase{
		// Names become Services (<name>, <name>-client: DNS-1035, at most 63) and pods <name>-<n>.
		{name: "name with a dot", manifest: named(ok3, "my.cluster"), want: "metadata.name must be a DNS-1035 label"},
		{name: "name with two dots", manifest: named(ok3, "a.b.c"), want: "metadata.name must be a DNS-1035 label"},
		{name: "name with a leading digit", manifest: named(ok3, "1cluster"), want: "metadata.name must be a DNS-1035 label"},
		{name: "name all digits", manifest: named(ok3, `"123"`), want: "metadata.name must be a DNS-1035 label"},
		{name: "name of 57 characters", manifest: named(ok3, "a"+strings.Repeat("b", 56)), want: "at most 56 characters"},
		{name: "name of 63 characters", manifest: named(ok3, "a"+strings.Repeat("b", 62)), want: "at most 56 characters"},
		{name: "name of 56 characters is fine", manifest: named(ok3, "a"+strings.Repeat("b", 55))},
		// Image repositories.
		{name: "repository with a space", manifest: cluster("size: 3\n  repository: \"quay.io/coreos/ etcd\""), want: "repository must be an image repository"},
		{name: "repository with a tag", manifest: cluster("size: 3\n  repository: quay.io/coreos/etcd:v3.6.16"), want: "repository must be an image repository"},
		{name: "repository with a digest", manifest: cluster("size: 3\n  repository: quay.io/coreos/etcd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), want: "repository must be an image repository"},
		{name: "repository with upper-case path", manifest: cluster("size: 3\n  repository: quay.io/CoreOS/etcd"), want: "repository must be an image repository"},
		{name: "repository with a scheme", manifest: cluster("size: 3\n  repository: https://quay.io/coreos/etcd"), want: "repository must be an image repository"},
		{name: "repository ending in a slash", manifest: cluster("size: 3\n  repository: quay.io/coreos/"), want: "repository must be an image repository"},
		{name: "repository of a registry with a port is fine", manifest: cluster("size: 3\n  repository: registry.example.com:5000/team/etcd")},
		{name: "repository without a registry is fine", manifest: cluster("size: 3\n  repository: etcd")},
		// Secret names.
		{name: "operator secret with upper case", manifest: cluster("size: 3\n  TLS:\n    static:\n      member: {serverSecret: server}\n      operatorSecret: Client"), want: "operatorSecret"},
		{name: "server secret with a slash", manifest: cluster("size: 3\n  TLS:\n    static:\n      member: {serverSecret: ns/server}\n      operatorSecret: client"), want: "serverSecret"},
		{name: "peer secret with a space", manifest: cluster("size: 3\n  TLS:\n    static:\n      member: {peerSecret: \"peer tls\"}"), want: "peerSecret"},
		{name: "auth secret with a slash", manifest: cluster("size: 3\n  auth: {secretName: other-ns/root}"), want: "secretName"},
		{name: "auth without a secret", manifest: cluster("size: 3\n  auth: {}"), want: "spec.auth.secretName: Required value"},
		{name: "TLS static and auto together", manifest: cluster("size: 3\n  TLS:\n    auto: {}\n    static: {member: {peerSecret: p}}"), want: "TLS.static and TLS.auto are exclusive"},
		{name: "TLS auto validity too short", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 5m}"), want: "at least 10m"},
		{name: "TLS auto renewBefore too short", manifest: cluster("size: 3\n  TLS:\n    auto: {renewBefore: 30s}"), want: "at least 5m"},
		{name: "TLS auto renewBefore beyond validity", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 1h, renewBefore: 2h}"), want: "renewBefore must be shorter"},
		{name: "TLS auto not a duration", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: soon}"), want: "validity"},
		{name: "TLS auto is fine", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 2160h, renewBefore: 720h}")},
		{name: "TLS auto validity in days", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 90d}"), want: "TLS.auto.validity must be a Go duration"},
		{name: "TLS auto renewBefore with a space", manifest: cluster("size: 3\n  TLS:\n    auto: {renewBefore: 30 m}"), want: "TLS.auto.renewBefore must be a Go duration"},
		{name: "TLS auto durations as Go writes them are fine", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 2160h0m0s, renewBefore: .5h}")},
		{name: "TLS auto from cert-manager", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {name: ca, kind: ClusterIssuer}}")},
		{name: "TLS auto from cert-manager, validity under cert-manager's minimum", manifest: cluster("size: 3\n  TLS:\n    auto: {validity: 30m, issuerRef: {name: ca}}"), want: "at least 1h with an issuerRef"},
		{name: "TLS auto issuer without a name", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {kind: Issuer}}"), want: "spec.TLS.auto.issuerRef.name"},
		{name: "TLS auto issuer kind not a kind", manifest: cluster("size: 3\n  TLS:\n    auto: {issuerRef: {name: ca, kind: \"issuer; rm\"}}"), want: "spec.TLS.auto.issuerRef.kind"},
		{name: "auth secret is fine", manifest: cluster("size: 3\n  auth: {secretName: etcd-root}")},
		{name: "peer secret too long", manifest: cluster("size: 3\n  TLS:\n    static:\n      member: {peerSecret: " + strings.Repeat("p", 254) + "}"), want: "peerSecret"},
		// Quantities.
		{name: "negative volume size", manifest: cluster("size: 3\n  pod:\n    persistentVolumeClaimSpec:\n      resources: {requests: {storage: -1Gi}}"), want: "storage must not be negative"},
		{name: "negative volume size in bytes", manifest: cluster("size: 3\n  pod:\n    persistentVolumeClaimSpec:\n      resources: {requests: {storage: \"-5\"}}"), want: "storage must not be negative"},
		{name: "cpu request above limit", manifest: cluster("size: 3\n  pod:\n    resources: {requests: {cpu: \"2\"}, limits: {cpu: 500m}}"), want: "resources.requests must not exceed resources.limits"},
		{name: "memory request above limit", manifest: cluster("size: 3\n  pod:\n    resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}"), want: "resources.requests must not exceed resources.limits"},
		{name: "request equal to limit is fine", manifest: cluster("size: 3\n  pod:\n    resources: {requests: {memory: 1Gi, cpu: \"1\"}, limits: {memory: 1024Mi, cpu: 1000m}}")},
		// Labels (their length; see the file comment for their syntax).
		{name: "label value of 64 characters", manifest: cluster("size: 3\n  pod:\n    labels: {team: " + strings.Repeat("v", 64) + "}"), want: "spec.pod.labels.team: Too long"},
		{name: "label key name of 318 characters", manifest: cluster("size: 3\n  pod:\n    labels: {" + strings.Repeat("k", 318) + ": v}"), want: "pod labels must be valid labels"},
		// Durations.
		{name: "DNS timeout of more than an hour", manifest: cluster("size: 3\n  pod:\n    DNSTimeoutInSecond: 3601"), want: "DNSTimeoutInSecond"},
		{name: "DNS timeout that overflows", manifest: cluster("size: 3\n  pod:\n    DNSTimeoutInSecond: 9223372036"), want: "DNSTimeoutInSecond"},
		// etcdEnv that takes over what the operator sets.
		{name: "env ETCD_NAME", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_NAME, value: x}]"), want: "etcdEnv must not set the variables of the flags the operator sets"},
		{name: "env ETCD_DATA_DIR", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_DATA_DIR, value: /tmp}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_WAL_DIR", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_WAL_DIR, value: /tmp/wal}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_INITIAL_CLUSTER", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_INITIAL_CLUSTER, value: a=http://a:2380}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_INITIAL_CLUSTER_STATE", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_INITIAL_CLUSTER_STATE, value: new}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_LISTEN_CLIENT_URLS", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_LISTEN_CLIENT_URLS, value: http://0.0.0.0:1}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_ADVERTISE_CLIENT_URLS", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_ADVERTISE_CLIENT_URLS, value: http://x:2379}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_PEER_CERT_FILE", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_PEER_CERT_FILE, value: /x}]"), want: "etcdEnv must not set"},
		{name: "env ETCD_CLIENT_CERT_AUTH", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_CLIENT_CERT_AUTH, value: \"false\"}]"), want: "etcdEnv must not set"},
		{name: "tuning env is fine", manifest: cluster("size: 3\n  pod:\n    etcdEnv: [{name: ETCD_HEARTBEAT_INTERVAL, value: \"200\"}, {name: ETCD_ELECTION_TIMEOUT, value: \"2000\"}]")},
	})
}

func TestHostileEtcdBackup(t *testing.T) {
	s3 := func(block string) string {
		return backup("etcdCluster: {name: c}\n  storageType: S3\n  s3: " + block)
	}
	runCreateCases(t, []createCase{
		// Paths.
		{name: "path with a dot segment", manifest: s3("{path: bucket/./etcd.backup}"), want: "path must not have '.' or '..' segments"},
		{name: "path with a dot-dot segment", manifest: s3("{path: bucket/../other/etcd.backup}"), want: "path must not have '.' or '..' segments"},
		{name: "path ending in dot-dot", manifest: s3("{path: bucket/team/..}"), want: "path must not have '.' or '..' segments"},
		{name: "path with an empty segment", manifest: s3("{path: bucket//etcd.backup}"), want: "empty segments"},
		{name: "abs path with a dot-dot segment", manifest: backup("etcdCluster: {name: c}\n  storageType: ABS\n  abs: {path: container/../x}"), want: "path must not have '.' or '..' segments"},
		{name: "gcs path with an empty segment", manifest: backup("etcdCluster: {name: c}\n  storageType: GCS\n  gcs: {path: bucket/a//b}"), want: "empty segments"},
		{name: "path with dots inside names is fine", manifest: s3("{path: bucket/team.a/etcd..backup}")},
		// Secret names.
		{name: "aws secret with upper case", manifest: s3("{path: b/k, awsSecret: AWS}"), want: "awsSecret"},
		{name: "aws secret with a slash", manifest: s3("{path: b/k, awsSecret: other-ns/aws}"), want: "awsSecret"},
		{name: "abs secret with a space", manifest: backup("etcdCluster: {name: c}\n  storageType: ABS\n  abs: {path: c/k, absSecret: \"abs creds\"}"), want: "absSecret"},
		{name: "gcp secret with an underscore", manifest: backup("etcdCluster: {name: c}\n  storageType: GCS\n  gcs: {path: b/k, gcpSecret: gcp_key}"), want: "gcpSecret"},
		{name: "backup auth secret with upper case", manifest: backup("etcdEndpoints: [\"http://c-client:2379\"]\n  auth: {secretName: Root}\n  storageType: S3\n  s3: {path: b/k}"), want: "auth.secretName"},
		{name: "client TLS secret too long", manifest: backup("etcdEndpoints: [\"https://c-client:2379\"]\n  clientTLSSecret: " + strings.Repeat("c", 254) + "\n  storageType: S3\n  s3: {path: b/k}"), want: "clientTLSSecret"},
		{name: "cluster name with upper case", manifest: backup("etcdCluster: {name: Prod}\n  storageType: S3\n  s3: {path: b/k}"), want: "etcdCluster.name"},
		// Credentials in URLs.
		{name: "etcd endpoint with user and password", manifest: backup("etcdEndpoints: [\"http://root:secret@c-client:2379\"]\n  storageType: S3\n  s3: {path: b/k}"), want: "must not carry credentials"},
		{name: "etcd endpoint with a user", manifest: backup("etcdEndpoints: [\"https://root@c-client:2379\"]\n  storageType: S3\n  s3: {path: b/k}"), want: "must not carry credentials"},
		{name: "s3 endpoint with credentials", manifest: s3("{path: b/k, endpoint: \"http://minio:minio123@minio:9000\"}"), want: "endpoint must not carry credentials"},
		{name: "abs endpoint with credentials", manifest: backup("etcdCluster: {name: c}\n  storageType: ABS\n  abs: {path: c/k, endpoint: \"http://acct:key@azurite:10000\"}"), want: "endpoint must not carry credentials"},
		{name: "gcs endpoint with credentials", manifest: backup("etcdCluster: {name: c}\n  storageType: GCS\n  gcs: {path: b/k, endpoint: \"https://token@storage.example\"}"), want: "endpoint must not carry credentials"},
		// Durations.
		{name: "timeout of more than a day", manifest: s3("{path: b/k}\n  backupPolicy: {timeoutInSecond: 86401}"), want: "timeoutInSecond"},
		{name: "timeout that overflows time.Duration", manifest: s3("{path: b/k}\n  backupPolicy: {timeoutInSecond: 9223372037}"), want: "timeoutInSecond"},
		{name: "timeout of 1 second", manifest: s3("{path: b/k}\n  backupPolicy: {timeoutInSecond: 1}"), want: "timeoutInSecond must be 0"},
		{name: "interval of more than a year", manifest: s3("{path: b/k}\n  backupPolicy: {backupIntervalInSecond: 31536001}"), want: "backupIntervalInSecond"},
		{name: "interval that overflows time.Duration", manifest: s3("{path: b/k}\n  backupPolicy: {backupIntervalInSecond: 9300000000}"), want: "backupIntervalInSecond"},
		{name: "timeout of a day is fine", manifest: s3("{path: b/k}\n  backupPolicy: {timeoutInSecond: 86400}")},
	})
}

func TestHostileEtcdRestore(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "scratch name with a dot", manifest: restore("etcdCluster: {name: drill.prod}\n  clusterTemplate: {name: prod}\n  backupRef: {name: b}"), want: "etcdCluster.name must be a DNS-1035 label"},
		{name: "scratch name with a leading digit", manifest: restore("etcdCluster: {name: 2drill}\n  clusterTemplate: {name: prod}\n  backupRef: {name: b}"), want: "etcdCluster.name must be a DNS-1035 label"},
		{name: "scratch name of 57 characters", manifest: restore("etcdCluster: {name: d" + strings.Repeat("x", 56) + "}\n  clusterTemplate: {name: prod}\n  backupRef: {name: b}"), want: "at most 56 characters"},
		{name: "backupRef with a slash", manifest: restore("etcdCluster: {name: c}\n  backupRef: {name: other/b}"), want: "backupRef.name"},
		{name: "backupScheduleRef with upper case", manifest: restore("etcdCluster: {name: c}\n  backupScheduleRef: {name: Nightly}"), want: "backupScheduleRef.name"},
		{name: "path with a dot-dot segment", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: S3\n  s3: {path: bucket/../etcd.backup}"), want: "path must not have '.' or '..' segments"},
		{name: "s3 endpoint with credentials", manifest: restore("etcdCluster: {name: c}\n  backupStorageType: S3\n  s3: {path: b/k, endpoint: \"http://u:p@minio:9000\"}"), want: "endpoint must not carry credentials"},
		{name: "ttl of more than 30 days", manifest: restore("etcdCluster: {name: drill}\n  clusterTemplate: {name: prod}\n  backupRef: {name: b}\n  ttlSecondsAfterFinished: 2592001"), want: "ttlSecondsAfterFinished"},
	})
}

func TestHostileEtcdBackupSchedule(t *testing.T) {
	runCreateCases(t, []createCase{
		// Cron fields out of range and zero steps.
		{name: "minute 60", manifest: schedule(`"60 * * * *"`, ""), want: "schedule has a field out of range or a zero step"},
		{name: "hour 24", manifest: schedule(`"0 24 * * *"`, ""), want: "out of range"},
		{name: "day of month 32", manifest: schedule(`"0 0 32 * *"`, ""), want: "out of range"},
		{name: "day of month 0", manifest: schedule(`"0 0 0 * *"`, ""), want: "out of range"},
		{name: "month 13", manifest: schedule(`"0 0 1 13 *"`, ""), want: "out of range"},
		{name: "day of week 8", manifest: schedule(`"0 0 * * 8"`, ""), want: "out of range"},
		{name: "zero step", manifest: schedule(`"*/0 * * * *"`, ""), want: "zero step"},
		{name: "zero step in a range", manifest: schedule(`"0 1-5/0 * * *"`, ""), want: "zero step"},
		{name: "range end out of range", manifest: schedule(`"0 0 * * 1-9"`, ""), want: "out of range"},
		{name: "unknown month name", manifest: schedule(`"0 0 1 JUNE *"`, ""), want: "out of range"},
		{name: "list with an out-of-range minute", manifest: schedule(`"0,30,75 * * * *"`, ""), want: "out of range"},
		{name: "names, lists, ranges and steps are fine", manifest: schedule(`"0,30 */2 1-15/7 jan-jun MON-FRI"`, "")},
		{name: "drill minute 61", manifest: scheduleWithDrill(`"61 4 * * 0"`, ""), want: "restoreDrill.schedule has a field out of range"},
		{name: "drill zero step", manifest: scheduleWithDrill(`"0 */0 * * *"`, ""), want: "restoreDrill.schedule has a field out of range or a zero step"},
		// Time zones.
		{name: "time zone Local", manifest: schedule(`"0 * * * *"`, "timeZone: Local"), want: "timeZone must name a zone"},
		{name: "time zone with a space", manifest: schedule(`"0 * * * *"`, "timeZone: \"Europe/ Berlin\""), want: "timeZone"},
		{name: "time zone with a path", manifest: schedule(`"0 * * * *"`, "timeZone: ../../etc/passwd"), want: "timeZone"},
		// Durations.
		{name: "starting deadline of more than a year", manifest: schedule(`"0 * * * *"`, "startingDeadlineSeconds: 31536001"), want: "startingDeadlineSeconds"},
		{name: "starting deadline of 5 seconds", manifest: schedule(`"0 * * * *"`, "startingDeadlineSeconds: 5"), want: "startingDeadlineSeconds"},
		{name: "starting deadline of 0", manifest: schedule(`"0 * * * *"`, "startingDeadlineSeconds: 0"), want: "startingDeadlineSeconds"},
		{name: "starting deadline that overflows", manifest: schedule(`"0 * * * *"`, "startingDeadlineSeconds: 9223372037"), want: "startingDeadlineSeconds"},
		{name: "maxAge of a second", manifest: schedule(`"0 * * * *"`, "retention: {maxAge: 1s}"), want: "maxAge must be at least 1m"},
		{name: "maxAge that overflows", manifest: schedule(`"0 * * * *"`, "retention: {maxAge: 9999999999h}"), want: "maxAge"},
		{name: "capture segment interval of 0", manifest: schedule(`"0 * * * *"`, "continuousCapture: {segmentIntervalSeconds: 0}"), want: "segmentIntervalSeconds"},
		{name: "capture segment interval of an hour", manifest: schedule(`"0 * * * *"`, "continuousCapture: {segmentIntervalSeconds: 3600}"), want: "segmentIntervalSeconds"},
		{name: "capture segments of 1Ki", manifest: schedule(`"0 * * * *"`, "continuousCapture: {maxSegmentSize: 1Ki}"), want: "maxSegmentSize must be at least 64Ki"},
		{name: "capture buffer of 2Gi", manifest: schedule(`"0 * * * *"`, "continuousCapture: {maxBufferedSize: 2Gi}"), want: "maxBufferedSize must be at most 1Gi"},
		{name: "capture buffer below the segment size", manifest: schedule(`"0 * * * *"`, "continuousCapture: {maxSegmentSize: 16Mi, maxBufferedSize: 8Mi}"), want: "maxBufferedSize must be at least maxSegmentSize"},
		{name: "capture with every field is fine", manifest: schedule(`"0 * * * *"`, "continuousCapture: {segmentIntervalSeconds: 10, maxSegmentSize: 4Mi, maxBufferedSize: 32Mi}")},
		{name: "capture with defaults is fine", manifest: schedule(`"0 * * * *"`, "continuousCapture: {}")},
		{name: "template timeout of more than a day", manifest: scheduleWithPolicy("backupPolicy: {timeoutInSecond: 100000}"), want: "timeoutInSecond"},
		{name: "drill ttl of more than 30 days", manifest: scheduleWithDrill(`"0 4 * * 0"`, "\n    ttlSecondsAfterFinished: 2592001"), want: "ttlSecondsAfterFinished"},
		// Names and references.
		{name: "name of 64 characters", manifest: strings.Replace(schedule(`"0 * * * *"`, ""), "name: s\n", "name: s"+strings.Repeat("x", 63)+"\n", 1), want: "metadata.name must be at most 63 characters"},
		{name: "template secret with upper case", manifest: strings.Replace(schedule(`"0 * * * *"`, ""), "s3: {path: b/prefix}", "s3: {path: b/prefix, awsSecret: AWS}", 1), want: "awsSecret"},
		{name: "template path with a dot-dot segment", manifest: strings.Replace(schedule(`"0 * * * *"`, ""), "s3: {path: b/prefix}", "s3: {path: b/../prefix}", 1), want: "path must not have '.' or '..' segments"},
		{name: "drill of endpoint backups without a template", manifest: strings.Replace(scheduleWithDrill(`"0 4 * * 0"`, ""), "etcdCluster: {name: c}", "etcdEndpoints: [\"http://c-client:2379\"]", 1), want: "restoreDrill needs clusterTemplate"},
		{name: "drill of endpoint backups with a template is fine", manifest: strings.Replace(scheduleWithDrill(`"0 4 * * 0"`, "\n    clusterTemplate: {name: prod}"), "etcdCluster: {name: c}", "etcdEndpoints: [\"http://c-client:2379\"]", 1)},
	})
}

func scheduleWithDrill(cron, drillExtra string) string {
	return schedule(`"0 3 * * *"`, "restoreDrill:\n    schedule: "+cron+drillExtra)
}
