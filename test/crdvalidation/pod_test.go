package crdvalidation

import (
	"strings"
	"testing"
)

// The pod fields of spec.pod that the operator copies into member pods are checked at admission
// with the rules Kubernetes applies to the pod, where CEL can express them within its cost
// budget (see hostile_test.go for what is left to the pod): a value the apiserver would refuse
// on the member pod is refused on the EtcdCluster, with a message that names the field.

// podPolicy returns a cluster whose spec.pod is body (indented by 4).
func podPolicy(body string) string { return cluster("size: 3\n  pod:\n" + body) }

func TestPodLabelsAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "label keys and values as Kubernetes takes them", manifest: podPolicy(`    labels: {example.com/team: storage, app.kubernetes.io/part-of: etcd, Tier: "A_b.c-1", empty: ""}`)},
		{name: "label key with a space", manifest: podPolicy(`    labels: {"team a": x}`), want: "pod label keys must be qualified names"},
		{name: "label key with an upper-case prefix", manifest: podPolicy(`    labels: {Example.com/team: x}`), want: "pod label keys must be qualified names"},
		{name: "label key with an empty name", manifest: podPolicy(`    labels: {example.com/: x}`), want: "pod label keys must be qualified names"},
		{name: "label key name of 64 characters", manifest: podPolicy("    labels: {example.com/" + strings.Repeat("n", 64) + ": x}"), want: "pod label keys must be qualified names"},
		{name: "label key name of 63 characters is fine", manifest: podPolicy("    labels: {example.com/" + strings.Repeat("n", 63) + ": x}")},
		{name: "label key prefix of 254 characters", manifest: podPolicy("    labels: {" + strings.Repeat("p", 254) + "/n: x}"), want: "pod label keys must be qualified names"},
		{name: "label key prefix of 253 characters is fine", manifest: podPolicy("    labels: {" + strings.Repeat("p", 253) + "/n: x}")},
		{name: "label value with a space", manifest: podPolicy(`    labels: {team: "a b"}`), want: "spec.pod.labels.team in body should match"},
		{name: "label value starting with a dash", manifest: podPolicy(`    labels: {team: -a}`), want: "spec.pod.labels.team in body should match"},
		{name: "label value of 63 characters is fine", manifest: podPolicy("    labels: {team: " + strings.Repeat("v", 63) + "}")},
	})
}

func TestPodNodeSelectorAndAnnotationsAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "node selector as Kubernetes takes it", manifest: podPolicy(`    nodeSelector: {kubernetes.io/arch: amd64, node-role.kubernetes.io/etcd: ""}`)},
		{name: "node selector key with a space", manifest: podPolicy(`    nodeSelector: {"disk type": ssd}`), want: "nodeSelector keys must be qualified label names"},
		{name: "node selector value with a slash", manifest: podPolicy(`    nodeSelector: {disk: ssd/nvme}`), want: "spec.pod.nodeSelector.disk in body should match"},
		{name: "node selector value of 64 characters", manifest: podPolicy("    nodeSelector: {disk: " + strings.Repeat("s", 64) + "}"), want: "spec.pod.nodeSelector.disk: Too long"},
		{name: "annotations as Kubernetes takes them", manifest: podPolicy(`    annotations: {Example.COM/Note: "any text, even with spaces: {}", prometheus.io/scrape: "true"}`)},
		{name: "annotation key with a space", manifest: podPolicy(`    annotations: {"my note": x}`), want: "pod annotation keys must be qualified names"},
		{name: "annotation key with two slashes", manifest: podPolicy(`    annotations: {example.com/a/b: x}`), want: "pod annotation keys must be qualified names"},
		{name: "annotations above 256 KiB", manifest: podPolicy("    annotations: {note: " + strings.Repeat("a", 256*1024) + "}"), want: "pod annotations must not exceed 256 KiB"},
		{name: "annotations of 200 KiB are fine", manifest: podPolicy("    annotations: {note: " + strings.Repeat("a", 200*1024) + "}")},
	})
}

func TestPodTolerationsAdmission(t *testing.T) {
	tol := func(items string) string { return podPolicy("    tolerations: [" + items + "]") }
	runCreateCases(t, []createCase{
		{name: "tolerations as Kubernetes takes them", manifest: tol(`{operator: Exists}, {key: dedicated, value: etcd, effect: NoSchedule}, {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}`)},
		{name: "toleration operator In", manifest: tol(`{key: k, operator: In, value: v}`), want: "tolerations: operator must be Equal or Exists"},
		{name: "toleration effect unknown", manifest: tol(`{key: k, operator: Exists, effect: NoScheduleNow}`), want: "tolerations: effect must be NoSchedule, PreferNoSchedule, NoExecute or empty"},
		{name: "toleration without key and operator Equal", manifest: tol(`{operator: Equal, value: v}`), want: "tolerations: a toleration without key must have operator Exists"},
		{name: "toleration without key and operator", manifest: tol(`{effect: NoSchedule}`), want: "tolerations: a toleration without key must have operator Exists"},
		{name: "toleration Exists with a value", manifest: tol(`{key: k, operator: Exists, value: v}`), want: "tolerations: value must be empty when operator is Exists"},
		{name: "toleration seconds without NoExecute", manifest: tol(`{key: k, operator: Exists, tolerationSeconds: 60}`), want: "tolerations: tolerationSeconds needs effect NoExecute"},
		{name: "toleration value of 64 characters", manifest: tol("{key: k, value: " + strings.Repeat("v", 64) + "}"), want: "tolerations: key must be a label key"},
		{name: "toleration key of 318 characters", manifest: tol("{key: " + strings.Repeat("k", 318) + ", operator: Exists}"), want: "tolerations: key must be a label key"},
		{name: "33 tolerations", manifest: tol(strings.TrimSuffix(strings.Repeat("{operator: Exists}, ", 33), ", ")), want: "spec.pod.tolerations: Too many"},
	})
}

func TestPodEnvAdmission(t *testing.T) {
	env := func(items string) string { return podPolicy("    etcdEnv: [" + items + "]") }
	runCreateCases(t, []createCase{
		{name: "variables as Kubernetes takes them", manifest: env(`{name: ETCD_HEARTBEAT_INTERVAL, value: "200"},
      {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}},
      {name: ZONE, valueFrom: {fieldRef: {fieldPath: "metadata.labels['topology.kubernetes.io/zone']"}}},
      {name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}},
      {name: ETCD_EXPERIMENTAL_X, valueFrom: {configMapKeyRef: {name: tuning, key: x}}},
      {name: EMPTY, value: ""}`)},
		{name: "variable without name", manifest: env(`{name: "", value: x}`), want: "etcdEnv: every variable needs a name"},
		{name: "value and valueFrom", manifest: env(`{name: X, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}`), want: "etcdEnv: value and valueFrom cannot both be set"},
		{name: "valueFrom without source", manifest: env(`{name: X, valueFrom: {}}`), want: "etcdEnv: valueFrom must have exactly one of"},
		{name: "valueFrom with two sources", manifest: env(`{name: X, valueFrom: {fieldRef: {fieldPath: metadata.name}, secretKeyRef: {name: s, key: k}}}`), want: "etcdEnv: valueFrom must have exactly one of"},
		{name: "secretKeyRef without name", manifest: env(`{name: X, valueFrom: {secretKeyRef: {key: k}}}`), want: "etcdEnv: valueFrom.secretKeyRef and valueFrom.configMapKeyRef need a name and a key"},
		{name: "configMapKeyRef with an empty key", manifest: env(`{name: X, valueFrom: {configMapKeyRef: {name: c, key: ""}}}`), want: "need a name and a key"},
		{name: "fieldRef to a field a container cannot read", manifest: env(`{name: X, valueFrom: {fieldRef: {fieldPath: spec.containers}}}`), want: "etcdEnv: valueFrom.fieldRef.fieldPath must be one"},
		{name: "resourceFieldRef to an unknown resource", manifest: env(`{name: X, valueFrom: {resourceFieldRef: {resource: limits.gpu}}}`), want: "etcdEnv: valueFrom.resourceFieldRef.resource must be"},
	})
}

func TestPodResourcesAndSecurityAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "negative cpu request", manifest: podPolicy(`    resources: {requests: {cpu: "-1"}}`), want: "resources.requests and resources.limits must not be negative"},
		{name: "negative memory limit", manifest: podPolicy(`    resources: {limits: {memory: -1Gi}}`), want: "must not be negative"},
		{name: "ephemeral storage request above limit", manifest: podPolicy(`    resources: {requests: {ephemeral-storage: 2Gi}, limits: {ephemeral-storage: 1Gi}}`), want: "resources.requests must not exceed resources.limits"},
		{name: "ephemeral storage request equal to limit is fine", manifest: podPolicy(`    resources: {requests: {ephemeral-storage: 1Gi, cpu: "0"}, limits: {ephemeral-storage: 1024Mi}}`)},
		{name: "pod security context as Kubernetes takes it", manifest: podPolicy(`    securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, fsGroupChangePolicy: OnRootMismatch,
      seccompProfile: {type: Localhost, localhostProfile: profiles/etcd.json}, appArmorProfile: {type: RuntimeDefault}}`)},
		{name: "root is fine", manifest: podPolicy(`    securityContext: {runAsUser: 0}`)},
		{name: "negative runAsUser", manifest: podPolicy(`    securityContext: {runAsUser: -1}`), want: "securityContext: runAsUser, runAsGroup and fsGroup must be between 0 and 2147483647"},
		{name: "fsGroup above 2^31-1", manifest: podPolicy(`    securityContext: {fsGroup: 2147483648}`), want: "securityContext: runAsUser, runAsGroup and fsGroup must be between"},
		{name: "unknown fsGroupChangePolicy", manifest: podPolicy(`    securityContext: {fsGroupChangePolicy: Sometimes}`), want: "securityContext: fsGroupChangePolicy must be OnRootMismatch or Always"},
		{name: "Localhost seccomp without profile", manifest: podPolicy(`    securityContext: {seccompProfile: {type: Localhost}}`), want: "securityContext: seccompProfile.type and appArmorProfile.type must be"},
		{name: "RuntimeDefault seccomp with a profile", manifest: podPolicy(`    securityContext: {seccompProfile: {type: RuntimeDefault, localhostProfile: p.json}}`), want: "localhostProfile is set with Localhost and only then"},
		{name: "unknown seccomp type", manifest: podPolicy(`    securityContext: {seccompProfile: {type: Custom}}`), want: "securityContext: seccompProfile.type and appArmorProfile.type must be"},
		{name: "Localhost AppArmor without profile", manifest: podPolicy(`    securityContext: {appArmorProfile: {type: Localhost}}`), want: "securityContext: seccompProfile.type and appArmorProfile.type must be"},
		{name: "container security context as Kubernetes takes it", manifest: podPolicy(`    containerSecurityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsUser: 1000,
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}, seccompProfile: {type: RuntimeDefault}, procMount: Default}`)},
		{name: "container negative runAsGroup", manifest: podPolicy(`    containerSecurityContext: {runAsGroup: -5}`), want: "containerSecurityContext: runAsUser and runAsGroup must be between 0 and 2147483647"},
		{name: "container unknown procMount", manifest: podPolicy(`    containerSecurityContext: {procMount: Weird}`), want: "containerSecurityContext: procMount must be Default or Unmasked"},
		{name: "container Localhost seccomp without profile", manifest: podPolicy(`    containerSecurityContext: {seccompProfile: {type: Localhost}}`), want: "containerSecurityContext: seccompProfile.type"},
		{name: "privileged without privilege escalation", manifest: podPolicy(`    containerSecurityContext: {privileged: true, allowPrivilegeEscalation: false}`), want: "containerSecurityContext: allowPrivilegeEscalation cannot be false"},
		{name: "CAP_SYS_ADMIN without privilege escalation", manifest: podPolicy(`    containerSecurityContext: {allowPrivilegeEscalation: false, capabilities: {add: [CAP_SYS_ADMIN]}}`), want: "allowPrivilegeEscalation cannot be false"},
		{name: "privileged with privilege escalation is fine", manifest: podPolicy(`    containerSecurityContext: {privileged: true, allowPrivilegeEscalation: true}`)},
	})
}

func TestPodSchedulingAdmission(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "priority class name with a space", manifest: podPolicy(`    priorityClassName: "System Critical"`), want: "spec.pod.priorityClassName in body should match"},
		{name: "priority class name of the system is fine", manifest: podPolicy(`    priorityClassName: system-cluster-critical`)},
		{name: "affinity as Kubernetes takes it", manifest: podPolicy(`    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 1, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {etcd_cluster: c}}}
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 100, podAffinityTerm: {topologyKey: topology.kubernetes.io/zone}}`)},
		{name: "node affinity weight 0", manifest: podPolicy(`    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 0, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}`), want: "affinity: the weight of a preferred scheduling term must be between 1 and 100"},
		{name: "pod anti-affinity weight 101", manifest: podPolicy(`    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 101, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}`), want: "affinity: the weight of a preferred scheduling term must be between 1 and 100"},
		{name: "pod anti-affinity without topologyKey", manifest: podPolicy(`    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: ""}`), want: "affinity: every pod affinity and anti-affinity term needs a topologyKey"},
		{name: "preferred pod affinity without topologyKey", manifest: podPolicy(`    affinity:
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 10, podAffinityTerm: {topologyKey: ""}}`), want: "needs a topologyKey"},
		{name: "spread constraint as Kubernetes takes it", manifest: podPolicy(`    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, minDomains: 3, nodeAffinityPolicy: Honor, nodeTaintsPolicy: Ignore}`)},
		{name: "spread maxSkew 0", manifest: podPolicy("    topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]"), want: "topologySpreadConstraints: maxSkew must be at least 1"},
		{name: "spread whenUnsatisfiable unknown", manifest: podPolicy("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}]"), want: "topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"},
		{name: "spread topologyKey empty", manifest: podPolicy(`    topologySpreadConstraints: [{maxSkew: 1, topologyKey: "", whenUnsatisfiable: DoNotSchedule}]`), want: "topologySpreadConstraints: topologyKey must be a label key"},
		{name: "spread minDomains with ScheduleAnyway", manifest: podPolicy("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}]"), want: "topologySpreadConstraints: minDomains must be at least 1, and only with whenUnsatisfiable DoNotSchedule"},
		{name: "spread minDomains 0", manifest: podPolicy("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 0}]"), want: "minDomains must be at least 1"},
		{name: "spread nodeTaintsPolicy unknown", manifest: podPolicy("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Sometimes}]"), want: "nodeAffinityPolicy and nodeTaintsPolicy must be Honor or Ignore"},
	})
}
