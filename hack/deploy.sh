#!/usr/bin/env bash
# Installs, renders or removes the CRDs, RBAC and the three operators of manifests/, on the
# cluster of any kubeconfig.
#
#   hack/deploy.sh apply    kubectl apply --server-side of manifests/ with the operator image $IMG,
#                           then wait until the CRDs are Established and the three Deployments
#                           Available; on failure print the Deployments' pods (describe + logs)
#                           and exit non-zero.
#   hack/deploy.sh render   print what apply applies (the install.yaml of hack/release.sh).
#   hack/deploy.sh delete   remove the operators (Deployments, RBAC, namespace). The CRDs and every
#                           EtcdCluster, EtcdBackup, EtcdBackupSchedule and EtcdRestore stay:
#                           it lists what DELETE_CRDS=yes would delete. With DELETE_CRDS=yes it
#                           first deletes those custom resources (while the operators can still
#                           finish them; the member pods, volumes and backups they own go with
#                           them), then the CRDs, then the operators.
#
# IMG (default etcd-operator:dev, the local cluster's image) is the operator image.
# KUBECTL is the kubectl to use: default the one on PATH, else the one hack/build-k8s.sh builds
# (the built one for the local cluster's kubeconfig). KUBECONFIG as kubectl reads it; when unset
# and no ~/.kube/config exists, the local cluster's (hack/local-cluster.sh) if it is up.
# DEPLOY_TIMEOUT (seconds, default 180) bounds the wait.
# EXCLUDE_NAMESPACES (comma-separated, default none) adds --exclude-namespace to the three
# operators: hack/e2e.sh names the namespaces of the Helm e2e tests' own releases.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
USER_KUBECTL="${KUBECTL:-}"
source "$ROOT_DIR/hack/local-cluster/env.sh"
BUILT_KUBECTL="$KUBECTL"

IMG="${IMG:-etcd-operator:dev}"
NAMESPACE=etcd-operator-system
DEPLOYMENTS=(etcd-operator backup-operator restore-operator)
CRDS=(etcdclusters etcdbackups etcdrestores etcdbackupschedules)
GROUP=etcd.database.coreos.com
DEPLOY_TIMEOUT="${DEPLOY_TIMEOUT:-180}"

if [ -z "${KUBECONFIG:-}" ] && [ ! -f "$HOME/.kube/config" ] && [ -f "$LC_KUBECONFIG" ]; then
  export KUBECONFIG="$LC_KUBECONFIG"
fi

# pick_kubectl sets KUBECTL: $KUBECTL as given, the built one for the local cluster, else
# kubectl on PATH, else the built one (building it if needed).
pick_kubectl() {
  if [ -n "$USER_KUBECTL" ]; then
    KUBECTL="$USER_KUBECTL"
  elif [ "${KUBECONFIG:-}" != "$LC_KUBECONFIG" ] && command -v kubectl >/dev/null 2>&1; then
    KUBECTL="$(command -v kubectl)"
  else
    [ -x "$BUILT_KUBECTL" ] || "$ROOT_DIR/hack/build-k8s.sh" kubectl >&2
    KUBECTL="$BUILT_KUBECTL"
  fi
}

k() { "$KUBECTL" "$@"; }

# rendered prints manifests/ through a generated overlay (under .cache) that sets the operator
# image and, for the local dev tag, records the image's ID in the pod template: the tag stays the
# same when hack/images.sh imports a rebuilt image, so a changed ID is what rolls the Deployments.
# With "operators" it leaves out the CRDs.
rendered() {
  local what="${1:-all}" dir id="" idfile name tag
  mkdir -p "$CACHE_DIR"
  dir="$(mktemp -d "$CACHE_DIR/deploy.XXXXXX")"
  # Split IMG into name and tag (a registry port is not a tag; a digest reference stays whole).
  if [[ "$IMG" == *@* ]]; then
    name="${IMG%@*}" tag=""
  elif [[ "${IMG##*/}" == *:* ]]; then
    name="${IMG%:*}" tag="${IMG##*:}"
  else
    name="$IMG" tag=latest
  fi
  if [ "$IMG" = etcd-operator:dev ]; then
    # shellcheck disable=SC2012 # newest by mtime; the names are our own operator-<platform>.tar.id
    idfile="$(ls -t "$CACHE_DIR"/images/operator-*.tar.id 2>/dev/null | head -1 || true)"
    [ -z "$idfile" ] || id="$(sed -n 's/^id=\(sha256:[0-9a-f]*\).*/\1/p' "$idfile")"
  fi
  # A copy of manifests/ (kustomize loads no file outside the overlay's directory).
  cp -r "$ROOT_DIR/manifests" "$dir/base"
  [ "$what" != operators ] || sed -i '/^  - crd\//d' "$dir/base/kustomization.yaml"
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources: [base]"
    if [[ "$IMG" == *@* ]]; then
      echo "images: [{name: etcd-operator, newName: \"$name\", digest: \"${IMG#*@}\"}]"
    else
      echo "images: [{name: etcd-operator, newName: \"$name\", newTag: \"$tag\"}]"
    fi
    local ops=()
    [ -z "$id" ] || ops+=("{\"op\": \"add\", \"path\": \"/spec/template/metadata/annotations\", \"value\": {\"etcd-operator.local/image-id\": \"$id\"}}")
    [ -z "${EXCLUDE_NAMESPACES:-}" ] || ops+=("{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/0/args/-\", \"value\": \"--exclude-namespace=$EXCLUDE_NAMESPACES\"}")
    if [ ${#ops[@]} -gt 0 ]; then
      echo "patches:"
      echo "  - target: {kind: Deployment, namespace: $NAMESPACE}"
      echo "    patch: '[$(IFS=,; echo "${ops[*]}")]'"
    fi
  } >"$dir/kustomization.yaml"
  local rc=0
  k kustomize "$dir" || rc=$?
  rm -rf "$dir"
  return $rc
}

report_failure() {
  local d
  log "ERROR: the operators did not become Available within ${DEPLOY_TIMEOUT}s"
  k -n "$NAMESPACE" get deployments,replicasets,pods -o wide || true
  for d in "${DEPLOYMENTS[@]}"; do
    echo "===== $d: pods"
    k -n "$NAMESPACE" describe pods -l "app.kubernetes.io/name=$d" || true
    echo "===== $d: logs"
    k -n "$NAMESPACE" logs -l "app.kubernetes.io/name=$d" --all-containers --tail=100 --prefix || true
    k -n "$NAMESPACE" logs -l "app.kubernetes.io/name=$d" --all-containers --tail=50 --prefix --previous 2>/dev/null || true
  done
  echo "===== events"
  k -n "$NAMESPACE" get events --sort-by=.lastTimestamp | tail -30 || true
  exit 1
}

server() { k config view --minify -o jsonpath='{.clusters[0].cluster.server}' 2>/dev/null || echo "?"; }

apply() {
  local c d start=$SECONDS manifests
  log "applying manifests/ (image $IMG) with $KUBECTL to $(server)"
  manifests="$(rendered)"
  k apply --server-side --force-conflicts --field-manager=etcd-operator-deploy -f - <<<"$manifests" >/dev/null
  for c in "${CRDS[@]}"; do
    k wait --for condition=Established --timeout=60s "crd/$c.$GROUP" >/dev/null
  done
  for d in "${DEPLOYMENTS[@]}"; do
    local left=$((DEPLOY_TIMEOUT - (SECONDS - start)))
    ((left > 0)) || report_failure
    k -n "$NAMESPACE" rollout status "deployment/$d" --timeout="${left}s" >/dev/null 2>&1 || report_failure
    k -n "$NAMESPACE" wait --for condition=Available --timeout="${left}s" "deployment/$d" >/dev/null || report_failure
  done
  k -n "$NAMESPACE" get deployments
  log "operators Available in ${NAMESPACE} ($((SECONDS - start))s)"
}

# custom_resources prints "<kind> <namespace>/<name>" of every object of our CRDs.
custom_resources() {
  local c
  for c in "${CRDS[@]}"; do
    k get crd "$c.$GROUP" >/dev/null 2>&1 || continue
    k get "$c.$GROUP" --all-namespaces --no-headers \
      -o custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name 2>/dev/null |
      awk '{ print $1 " " $2 "/" $3 }'
  done
}

delete() {
  local c crs manifests
  crs="$(custom_resources)"
  if [ "${DELETE_CRDS:-}" != yes ]; then
    # Everything but the CRDs: the custom resources and what they own stay untouched.
    log "removing the operators (Deployments, RBAC, namespace $NAMESPACE) from $(server)"
    manifests="$(rendered operators)"
    k delete --ignore-not-found --wait --timeout=180s -f - <<<"$manifests" >/dev/null
    log "kept the CRDs ${CRDS[*]/%/.$GROUP} and $(grep -c . <<<"$crs" || true) custom resources; DELETE_CRDS=yes would delete:"
    # shellcheck disable=SC2001 # indents every line of a multi-line list
    [ -z "$crs" ] || sed 's/^/  /' <<<"$crs" >&2
    return 0
  fi
  manifests="$(rendered)"
  log "DELETE_CRDS=yes: deleting $(grep -c . <<<"$crs" || true) custom resources, the CRDs and the operators from $(server)"
  # shellcheck disable=SC2001 # indents every line of a multi-line list
  [ -z "$crs" ] || sed 's/^/  /' <<<"$crs" >&2
  for c in "${CRDS[@]}"; do
    if k get crd "$c.$GROUP" >/dev/null 2>&1; then
      k delete "$c.$GROUP" --all --all-namespaces --ignore-not-found --wait --timeout=120s >/dev/null ||
        log "WARNING: some $c were not deleted in time"
    fi
  done
  k delete --ignore-not-found --wait --timeout=180s -f - <<<"$manifests" >/dev/null
  log "removed the operators, RBAC and CRDs"
}

case "${1:-}" in
  apply) pick_kubectl && apply ;;
  render) pick_kubectl && rendered ;;
  delete) pick_kubectl && delete ;;
  *)
    echo "usage: $0 apply|render|delete" >&2
    exit 2
    ;;
esac
