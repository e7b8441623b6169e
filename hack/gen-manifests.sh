#!/usr/bin/env bash
# Generates the CRDs (manifests/crd, also embedded into the binaries for --create-crd) and one
# ClusterRole per binary (manifests/rbac/<binary>/role.yaml) from the kubebuilder markers.
# Usage: hack/gen-manifests.sh <controller-gen binary>
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cg="$1"
cd "$ROOT_DIR"

"$cg" crd:maxDescLen=0 paths=./pkg/apis/... output:crd:dir=./manifests/crd/.tmp
# Keep the field comments (they are the API reference) but drop them from the CRDs when that
# makes them too large for client-side apply; maxDescLen=0 above is the fallback we compare to.
"$cg" crd paths=./pkg/apis/... output:crd:dir=./manifests/crd/.full
for f in manifests/crd/.full/*.yaml; do
  name="$(basename "$f")"
  if [ "$(wc -c <"$f")" -lt 250000 ]; then cp "$f" "manifests/crd/$name"; else cp "manifests/crd/.tmp/$name" "manifests/crd/$name"; fi
done
rm -rf manifests/crd/.tmp manifests/crd/.full

# One least-privilege ClusterRole per binary: the markers of its controllers and of the shared
# manager setup (leader election, events, CRD install).
gen_role() { # <dir> <role name> <paths...>
  local dir="$1" role="$2"; shift 2
  local paths
  paths="$(IFS=,; echo "$*")"
  "$cg" rbac:roleName="$role" "paths={$paths}" output:rbac:dir="./manifests/rbac/$dir"
}
gen_role etcd-operator etcd-operator ./internal/manager/... ./internal/controller/etcdcluster/...
gen_role backup-operator etcd-backup-operator ./internal/manager/... ./internal/controller/etcdbackup/... ./internal/controller/etcdbackupschedule/... ./internal/controller/backupvolume/...
gen_role restore-operator etcd-restore-operator ./internal/manager/... ./internal/controller/etcdrestore/...

# The Helm chart ships copies of the CRDs and roles (helm cannot read files outside the chart).
"$(dirname "${BASH_SOURCE[0]}")/helm.sh" gen
