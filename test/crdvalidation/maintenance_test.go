package crdvalidation

import (
	"strings"
	"testing"
)

// TestMaintenanceAdmission: spec.maintenance (quota, auto-compaction, defragmentation) is
// checked at admission, including the etcd flag/variable conflicts that would make etcd exit.
func TestMaintenanceAdmission(t *testing.T) {
	m := func(body string) string { return cluster("size: 3\n  maintenance:\n" + body) }
	runCreateCases(t, []createCase{
		{name: "full maintenance", manifest: m(`    quotaBackendBytes: 4Gi
    autoCompaction: {mode: Periodic, retention: 30m}
    defragmentation: {schedule: "0 3 * * 0", fragmentedPercent: 40, minFreeBytes: 128Mi}`)},
		{name: "revision compaction", manifest: m("    autoCompaction: {mode: Revision, retention: \"10000\"}")},
		{name: "mode defaults to Periodic", manifest: m("    autoCompaction: {retention: 1h30m}")},
		{name: "quota as plain bytes", manifest: m("    quotaBackendBytes: 17179869184"), want: "quotaBackendBytes must be at most 8Gi"},
		{name: "quota at the minimum", manifest: m("    quotaBackendBytes: 16Mi")},
		{name: "quota too small", manifest: m("    quotaBackendBytes: 1Mi"), want: "quotaBackendBytes must be at least 16Mi"},
		{name: "quota too large", manifest: m("    quotaBackendBytes: 9Gi"), want: "quotaBackendBytes must be at most 8Gi"},
		{name: "unknown compaction mode", manifest: m("    autoCompaction: {mode: Hourly}"), want: "spec.maintenance.autoCompaction.mode"},
		{name: "revision retention not a number", manifest: m("    autoCompaction: {mode: Revision, retention: 1h}"), want: "retention must be a number of revisions"},
		{name: "periodic retention not a duration", manifest: m("    autoCompaction: {mode: Periodic, retention: \"100\"}"), want: "retention must be a duration"},
		// Defragmentation schedule: the rules of an EtcdBackupSchedule's schedule (plus the
		// CRON_TZ= prefix and @every that the defragmentation's parser has always taken).
		{name: "defragmentation schedule not cron", manifest: m(`    defragmentation: {schedule: "every sunday"}`), want: "defragmentation.schedule must be a 5-field cron expression"},
		{name: "defragmentation schedule of six fields", manifest: m(`    defragmentation: {schedule: "0 0 3 * * 0"}`), want: "defragmentation.schedule must be a 5-field cron expression"},
		{name: "defragmentation schedule with @every and no duration", manifest: m(`    defragmentation: {schedule: "@every day"}`), want: "defragmentation.schedule must be a 5-field cron expression"},
		{name: "defragmentation minute 60", manifest: m(`    defragmentation: {schedule: "60 3 * * 0"}`), want: "defragmentation.schedule has a field out of range or a zero step"},
		{name: "defragmentation day of week 7", manifest: m(`    defragmentation: {schedule: "0 3 * * 7"}`), want: "defragmentation.schedule has a field out of range"},
		{name: "defragmentation zero step", manifest: m(`    defragmentation: {schedule: "*/0 * * * *"}`), want: "defragmentation.schedule has a field out of range or a zero step"},
		{name: "defragmentation hour 24 after a time zone", manifest: m(`    defragmentation: {schedule: "CRON_TZ=Europe/Berlin 0 24 * * *"}`), want: "defragmentation.schedule has a field out of range"},
		{name: "defragmentation names, lists, ranges and steps are fine", manifest: m(`    defragmentation: {schedule: "0,30 */2 1-15/7 jan-jun MON-FRI"}`)},
		{name: "defragmentation descriptor is fine", manifest: m(`    defragmentation: {schedule: "@weekly"}`)},
		{name: "defragmentation with a time zone is fine", manifest: m(`    defragmentation: {schedule: "CRON_TZ=Europe/Berlin 0 3 * * 0"}`)},
		{name: "defragmentation @every is fine", manifest: m(`    defragmentation: {schedule: "@every 24h"}`)},
		{name: "defragmentation without schedule is fine", manifest: m(`    defragmentation: {schedule: ""}`)},
		{name: "periodic retention of 0", manifest: m("    autoCompaction: {mode: Periodic, retention: 0s}"), want: "autoCompaction.retention must be longer than 0 when mode is Periodic"},
		{name: "periodic retention of 0 minutes", manifest: m("    autoCompaction: {retention: 0m}"), want: "autoCompaction.retention must be longer than 0"},
		{name: "periodic retention of a second is fine", manifest: m("    autoCompaction: {retention: 1s}")},
		{name: "negative minFreeBytes", manifest: m("    defragmentation: {minFreeBytes: -64Mi}"), want: "defragmentation.minFreeBytes must not be negative"},
		{name: "minFreeBytes of 0 is fine", manifest: m(`    defragmentation: {minFreeBytes: "0"}`)},
		{name: "fragmentedPercent above 100", manifest: m("    defragmentation: {fragmentedPercent: 101}"), want: "fragmentedPercent"},
		{name: "negative fragmentedPercent", manifest: m("    defragmentation: {fragmentedPercent: -1}"), want: "fragmentedPercent"},
		{name: "quota flag and variable", manifest: cluster(`size: 3
  maintenance: {quotaBackendBytes: 4Gi}
  pod:
    etcdEnv: [{name: ETCD_QUOTA_BACKEND_BYTES, value: "4294967296"}]`), want: "cannot both be set"},
		{name: "compaction flag and variable", manifest: cluster(`size: 3
  maintenance: {autoCompaction: {retention: 1h}}
  pod:
    etcdEnv: [{name: ETCD_AUTO_COMPACTION_RETENTION, value: "2"}]`), want: "cannot both be set"},
		{name: "variable alone, as coreos manifests do", manifest: cluster(`size: 3
  maintenance: {defragmentation: {schedule: "@daily"}}
  pod:
    etcdEnv: [{name: ETCD_QUOTA_BACKEND_BYTES, value: "4294967296"}, {name: ETCD_AUTO_COMPACTION_RETENTION, value: "0"}]`)},
	})
}

// TestSchedulingAdmission: the pod policy's scheduling fields (issue 18 item 6).
func TestSchedulingAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "spread across zones, priority class, tolerations", manifest: cluster(`size: 3
  pod:
    priorityClassName: etcd-critical
    tolerations: [{key: dedicated, operator: Exists}]
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}`)},
		{name: "spread constraint without topologyKey", manifest: cluster(`size: 3
  pod:
    topologySpreadConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]`), want: "topologyKey"},
	})
}

// TestRecoveryAdmission: spec.recovery (issue 18 item 7) only without volumes.
func TestRecoveryAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "recovery of an emptyDir cluster", manifest: cluster("size: 3\n  recovery: {backupScheduleName: nightly, afterSeconds: 60}")},
		{name: "recovery with volumes", manifest: cluster(`size: 3
  recovery: {backupScheduleName: nightly}
  pod:
    persistentVolumeClaimSpec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}`), want: "recovery is for clusters without volumes"},
		{name: "recovery too soon", manifest: cluster("size: 3\n  recovery: {backupScheduleName: nightly, afterSeconds: 5}"), want: "afterSeconds"},
		{name: "recovery without a schedule", manifest: cluster("size: 3\n  recovery: {afterSeconds: 60}"), want: "backupScheduleName"},
		{name: "recovery from a schedule with upper case", manifest: cluster("size: 3\n  recovery: {backupScheduleName: Nightly}"), want: "spec.recovery.backupScheduleName"},
		{name: "recovery from a schedule with a slash", manifest: cluster("size: 3\n  recovery: {backupScheduleName: other/nightly}"), want: "spec.recovery.backupScheduleName"},
		{name: "recovery from a schedule name of 64 characters", manifest: cluster("size: 3\n  recovery: {backupScheduleName: n" + strings.Repeat("x", 63) + "}"), want: "spec.recovery.backupScheduleName: Too long"},
		{name: "recovery from a schedule name of 63 characters with dots is fine", manifest: cluster("size: 3\n  recovery: {backupScheduleName: prod.n" + strings.Repeat("x", 57) + "}")},
	})
}

// TestDayTwoAdmission: spec.hibernate only with volumes, spec.memberReplacement's bounds
// (issue 31 items 2 and 4).
func TestDayTwoAdmission(t *testing.T) {
	volumes := `
  pod:
    persistentVolumeClaimSpec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}`
	runCreateCases(t, []createCase{
		{name: "hibernate with volumes", manifest: cluster("size: 3\n  hibernate: true" + volumes)},
		{name: "hibernate without volumes", manifest: cluster("size: 3\n  hibernate: true"), want: "only a cluster with pod.persistentVolumeClaimSpec can hibernate"},
		{name: "awake without volumes", manifest: cluster("size: 3\n  hibernate: false")},
		{name: "replacement after a minute, volumes kept a day", manifest: cluster("size: 3\n  memberReplacement: {afterSeconds: 60, volumeRetentionSeconds: 86400}")},
		{name: "replacement off", manifest: cluster("size: 3\n  memberReplacement: {disabled: true}")},
		{name: "replacement too soon", manifest: cluster("size: 3\n  memberReplacement: {afterSeconds: 10}"), want: "spec.memberReplacement.afterSeconds"},
		{name: "negative retention", manifest: cluster("size: 3\n  memberReplacement: {volumeRetentionSeconds: -1}"), want: "spec.memberReplacement.volumeRetentionSeconds"},
		{name: "survivor recovery with volumes", manifest: cluster("size: 3\n  survivorRecovery: {afterSeconds: 600}" + volumes)},
		{name: "survivor recovery without volumes", manifest: cluster("size: 3\n  survivorRecovery: {}"), want: "only a cluster with pod.persistentVolumeClaimSpec has any"},
		{name: "survivor recovery too soon", manifest: cluster("size: 3\n  survivorRecovery: {afterSeconds: 5}" + volumes), want: "spec.survivorRecovery.afterSeconds"},
	})
}
