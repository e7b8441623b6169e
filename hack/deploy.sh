#!/usr/bin/env bash
# Installs (apply) or removes (delete) the CRDs, RBAC and the three operators of manifests/.
#
#   hack/deploy.sh apply    kubectl apply --server-side -k manifests/, then wait until the CRDs are
#                           Established and the three Deployments Available; on failure print
#                           the Deployments' pods (describe + logs) and exit non-zero.
#   hack/deploy.sh delete   delete our custom resources (while the operators can still finish
#                           them), then everything in manifests/.
#
# Uses $KUBECONFIG if set, else the local cluster's (hack/local-cluster.sh). IMG (default
# etcd-operator:dev) replaces the operator image; DEPLOY_TIMEOUT (seconds, default 180) bounds
# the wait.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

IMG="${IMG:-etcd-operator:dev}"
NAMESPACE=etcd-operator-system
DEPLOYMENTS=(etcd-operator backup-operator restore-operator)
CRDS=(etcdclusters etcdbackups etcdrestores etcdbackupschedules)
GROUP=etcd.database.coreos.com
DEPLOY_TIMEOUT="${DEPLOY_TIMEOUT:-180}"
KUBECONFIG="$(lc_kubeconfig)"
export KUBECONFIG

k() { "$KUBECTL" "$@"; }

# rendered prints manifests/ through a generated overlay (under .cache) that sets the operator
# image and, for the local dev tag, records the image's ID in the pod template: the tag stays the
# same when hack/images.sh imports a rebuilt image, so a changed ID is what rolls the Deployments.
rendered() {
  local dir="$CACHE_DIR/deploy" id="" idfile name="${IMG%:*}" tag="${IMG##*:}"
  [[ "$IMG" == *:* && "${IMG##*:}" != */* ]] || { name="$IMG" tag=latest; }
  if [ "$IMG" = etcd-operator:dev ]; then
    idfile="$(ls -t "$CACHE_DIR"/images/operator-*.tar.id 2>/dev/null | head -1 || true)"
    [ -z "$idfile" ] || id="$(sed -n 's/^id=\(sha256:[0-9a-f]*\).*/\1/p' "$idfile")"
  fi
  mkdir -p "$dir"
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources: [$(realpath --relative-to="$dir" "$ROOT_DIR/manifests")]"
    echo "images: [{name: etcd-operator, newName: \"$name\", newTag: \"$tag\"}]"
    if [ -n "$id" ]; then
      echo "patches:"
      echo "  - target: {kind: Deployment, namespace: $NAMESPACE}"
      echo "    patch: '[{\"op\": \"add\", \"path\": \"/spec/template/metadata/annotations\", \"value\": {\"etcd-operator.local/image-id\": \"$id\"}}]'"
    fi
  } >"$dir/kustomization.yaml"
  k kustomize "$dir"
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

apply() {
  local c d start=$SECONDS
  log "applying manifests/ (image $IMG) to $(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  rendered | k apply --server-side --force-conflicts --field-manager=etcd-operator-deploy -f - >/dev/null
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

delete() {
  local c
  for c in "${CRDS[@]}"; do
    if k get crd "$c.$GROUP" >/dev/null 2>&1; then
      k delete "$c.$GROUP" --all --all-namespaces --ignore-not-found --wait --timeout=120s >/dev/null ||
        log "WARNING: some $c were not deleted in time"
    fi
  done
  rendered | k delete --ignore-not-found --wait --timeout=180s -f - >/dev/null
  log "removed the operators, RBAC and CRDs"
}

case "${1:-}" in
  apply) apply ;;
  delete) delete ;;
  *)
    echo "usage: $0 apply|delete" >&2
    exit 2
    ;;
esac
