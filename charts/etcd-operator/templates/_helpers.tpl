{{/*
The three operators share one set of templates, called with a dict:
  root    the chart context ($)
  binary  etcd-operator | backup-operator | restore-operator (also the rbac file under files/rbac)
  v       the operator's values block (.Values.etcdOperator, ...)
*/}}

{{- define "etcd-operator.chart" -}}
{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<suffix>, the prefix of every object, cluster-scoped ones included. */}}
{{- define "etcd-operator.name" -}}
{{ printf "%s-%s" .root.Release.Name .suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "etcd-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .binary }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{- define "etcd-operator.labels" -}}
{{ include "etcd-operator.selectorLabels" . }}
app.kubernetes.io/part-of: etcd-operator
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ include "etcd-operator.chart" .root }}
{{- end }}

{{- define "etcd-operator.serviceAccountName" -}}
{{- if .v.serviceAccount.create -}}
{{ .v.serviceAccount.name | default (include "etcd-operator.name" (dict "root" .root "suffix" .binary)) }}
{{- else -}}
{{ .v.serviceAccount.name | default "default" }}
{{- end -}}
{{- end }}

{{/* The generated ClusterRole of a binary, parsed from files/rbac/<binary>.yaml. */}}
{{- define "etcd-operator.generatedRole" -}}
{{ .root.Files.Get (printf "files/rbac/%s.yaml" .binary) }}
{{- end }}

{{/* The namespaces an operator watches, as a list; empty means cluster-wide. */}}
{{- define "etcd-operator.watchNamespaces" -}}
{{- $list := list -}}
{{- range splitList "," (.v.watchNamespace | default .root.Values.watchNamespace) -}}
{{- if trim . }}{{ $list = append $list (trim .) }}{{ end -}}
{{- end -}}
{{ toJson $list }}
{{- end }}
