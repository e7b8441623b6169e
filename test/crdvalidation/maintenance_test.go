package crdvalidation

import "testing"

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
	})
}
