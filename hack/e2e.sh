#!/usr/bin/env bash
# Runs the e2e suite (test/e2e, build tag e2e) against the local cluster: brings the cluster up if
# it is not (hack/local-cluster.sh up is idempotent), builds and imports the images, deploys the
# operators, then `go test -tags e2e ./test/e2e/...`. Every step is cached, so a rerun spends its
# time in the tests.
#
#   hack/e2e.sh [go test args...]     e.g. hack/e2e.sh -run TestSmoke
#
# With KUBECONFIG set, the cluster it names is used as is: no local cluster, no image import
# (the images must already be where that cluster's nodes find them).
# E2E_TIMEOUT (default 60m) is go test's -timeout; E2E_DOWN=1 stops the local cluster afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

E2E_TIMEOUT="${E2E_TIMEOUT:-60m}"
external_cluster="${KUBECONFIG:+yes}"

timed() { # timed STEP COMMAND...: run, log the wall time, return the command's exit code
  local step="$1" start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  log "$step took $((SECONDS - start))s"
  return "$rc"
}

if [ -z "$external_cluster" ]; then
  timed "local cluster up" "$ROOT_DIR/hack/local-cluster.sh" up
  timed "images" "$ROOT_DIR/hack/images.sh" all
  export KUBECONFIG="$LC_KUBECONFIG"
  export E2E_CLUSTER_DNS="${E2E_CLUSTER_DNS:-$LC_BRIDGE_IP:53}"
else
  "$ROOT_DIR/hack/build-k8s.sh" kubectl
fi
export E2E_KUBECTL="${E2E_KUBECTL:-$KUBECTL}"
timed "deploy" "$ROOT_DIR/hack/deploy.sh" apply

rc=0
cd "$ROOT_DIR" || exit 1
timed "e2e tests" go test -tags e2e ./test/e2e/... -v -count=1 -timeout "$E2E_TIMEOUT" "$@" || rc=$?
if [ "${E2E_DOWN:-}" = 1 ] && [ -z "$external_cluster" ]; then
  "$ROOT_DIR/hack/local-cluster.sh" down
fi
exit $rc
