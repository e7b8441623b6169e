#!/usr/bin/env bash
# Runs the e2e suite (test/e2e, build tag e2e) against the local cluster: brings the cluster up if
# it is not (hack/local-cluster.sh up is idempotent), builds and imports the images, deploys the
# operators, then runs what `go test -tags e2e ./test/e2e/...` would, through hack/testbin.sh (each
# test binary linked once per its inputs, two packages at a time). Every step is cached, so a
# rerun spends its time in the tests.
#
#   hack/e2e.sh [go test flags...]    e.g. hack/e2e.sh -run TestSmoke (the test binary's flags:
#                                     -run, -v, -parallel, -timeout, -count, -skip, -failfast, ...)
#
# With KUBECONFIG set, the cluster it names is used as is: no local cluster, no image import
# (the images must already be where that cluster's nodes find them).
# On the local cluster it also starts the pod-reachable object stores (MinIO, fake-gcs-server,
# Azurite on the bridge address: `OBJSTORES_BIND=$LC_BRIDGE_IP hack/objstores.sh up`, idempotent)
# and exports E2E_OBJSTORES_ENV, the path of their env file (.cache/objstores/pods.env), which
# test/e2e/framework.ObjectStores reads, and E2E_OBJSTORES_REQUIRED=1 (fail instead of skip).
# With KUBECONFIG set, export E2E_OBJSTORES_ENV yourself (an env file with the OBJSTORE_*
# variables of stores the cluster's pods reach) or the object store tests skip.
# E2E_TIMEOUT (default 60m) is go test's -timeout; E2E_DOWN=1 stops cert-manager, the object
# stores and the local cluster afterwards. E2E_TIER (test/e2e/framework/tier.go) picks the tests:
# unset, every test but the long tier (make test, CI); long, the long tier alone (make
# test-e2e-long); all, every test. E2E_PKGS (default ./test/e2e/...) and E2E_TAGS (default e2e) choose
# the test packages and build tags (hack/chaos.sh runs ./test/chaos with "e2e,chaos").
# On the local cluster, for the e2e packages of the long tier (E2E_TIER=long or all), it also
# runs cert-manager (hack/cert-manager.sh up:
# its CRDs and controllers, built from its Go module) and exports E2E_CERT_MANAGER=1; with
# KUBECONFIG set, export E2E_CERT_MANAGER=1 yourself where cert-manager is installed, or
# TestCertManagerTLS skips.
# A failed test's namespace is dumped (pods, events, container and operator logs) into
# E2E_DUMP_DIR (default .cache/e2e/dumps/<namespace>.txt); the test log names the file. The
# output of go test is kept in .cache/e2e/go-test.log; a failed run appends its failed tests and
# their last lines to E2E_FAILURES (default .cache/e2e/failures.txt).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

E2E_TIMEOUT="${E2E_TIMEOUT:-60m}"
external_cluster="${KUBECONFIG:+yes}"

# E2E_PKGS: one package or pattern. The whole suite runs its longest packages first: a long
# package started last is the run's tail. The packages whose tests mostly wait (cron minutes and
# the backup operator's retry backoff: backup 213 s and drill 108 s in the CI rehearsal at
# 2c61555, against restore 518 s and etcdcluster 675 s; drill also holds TestAutomaticRecovery,
# 143 s waiting for a scheduled backup and its afterSeconds; kubectl waits for one scheduled run
# before its drill) run beside them in a go test of their
# own, so that they do not hold one of the two lanes the CPU-bound packages need; their output
# follows.
side=()
if [ -n "${E2E_PKGS:-}" ]; then
  pkgs=("$E2E_PKGS")
else
  mod=$(go list -m)
  side=("$mod/test/e2e/backup" "$mod/test/e2e/drill" "$mod/test/e2e/kubectl")
  mapfile -t pkgs < <(longest_first e2e ./test/e2e/... "$mod/test/e2e/etcdcluster" "$mod/test/e2e/restore" \
    "$mod/test/e2e/safety" | grep -vxF -f <(printf '%s\n' "${side[@]}"))
fi
if [ "${#pkgs[@]}" -lt 2 ] && [ -z "${E2E_PKGS:-}" ]; then
  log "go list found no packages to test"
  exit 1
fi
# The test binaries are linked first, and again only when their inputs changed (hack/testbin.sh:
# go test links every one of them on each run, about 10 CPU-seconds each, in a step whose CPU
# is the limit); a build error stops the run before any cluster is touched.
export TESTBIN_TAGS="${E2E_TAGS:-e2e}" TESTBIN_TIMEOUT="$E2E_TIMEOUT"
timed "e2e test binaries" "$ROOT_DIR/hack/testbin.sh" link "${pkgs[@]}" "${side[@]}" || exit 1

if [ -z "$external_cluster" ]; then
  local_stack_up || exit 1
  export E2E_OBJSTORES_REQUIRED=1 # just started: a test that cannot read them fails, never skips
  if [[ "${E2E_PKGS:-./test/e2e/...}" == ./test/e2e/* ]] && [ "${E2E_TIER:-ci}" != ci ]; then
    # cert-manager for TestCertManagerTLS (TLS.auto.issuerRef), which is in the long tier
    # (test/e2e/framework/tier.go); not for chaos or bench runs.
    timed "cert-manager" "$ROOT_DIR/hack/cert-manager.sh" up || exit 1
    export E2E_CERT_MANAGER=1
  fi
else
  "$ROOT_DIR/hack/build-k8s.sh" kubectl
fi
export E2E_KUBECTL="${E2E_KUBECTL:-$KUBECTL}"
# A failed test's namespace dump (pods, events, logs) goes there, not into the test log.
export E2E_DUMP_DIR="${E2E_DUMP_DIR:-$CACHE_DIR/e2e/dumps}"
# The Helm e2e tests run their own releases' operators on these namespaces: the shared ones leave
# them alone (two operators acting on one EtcdCluster race each other; test/e2e/helm).
export EXCLUDE_NAMESPACES="${EXCLUDE_NAMESPACES:-e2e-helm-watched,e2e-helm-upgrade-watched}"
timed "deploy" "$ROOT_DIR/hack/deploy.sh" apply

rc=0
cd "$ROOT_DIR" || exit 1
# The output is kept, and a failed run's tests with their last lines (hack/failures.awk) are
# appended to E2E_FAILURES: hack/test.sh repeats them at the end of the run.
mkdir -p "$CACHE_DIR/e2e"
out="$CACHE_DIR/e2e/go-test.log"
# shellcheck disable=SC2317 # called through timed
run_tests() {
  local rc=0 side_pid="" side_out="$CACHE_DIR/e2e/go-test-side.log"
  if [ "${#side[@]}" -gt 0 ]; then
    "$ROOT_DIR/hack/testbin.sh" run 2 "${side[@]}" -- -v "$@" >"$side_out" 2>&1 &
    side_pid=$!
  fi
  # two packages at a time, as go test -p 2 (this machine's cores); flags as go test takes them
  "$ROOT_DIR/hack/testbin.sh" run 2 "${pkgs[@]}" -- -v "$@" 2>&1 || rc=$?
  if [ -n "$side_pid" ]; then
    wait "$side_pid" || rc=$?
    cat "$side_out"
  fi
  return "$rc"
}
timed "e2e tests (${E2E_PKGS:-./test/e2e/...}${E2E_TIER:+, tier $E2E_TIER}${*:+ $*})" run_tests "$@" 2>&1 | tee "$out" || rc=$?
if [ "$rc" -ne 0 ]; then
  awk -v keep=25 -f "$ROOT_DIR/hack/failures.awk" "$out" >>"${E2E_FAILURES:-$CACHE_DIR/e2e/failures.txt}"
fi
if [ "${E2E_DOWN:-}" = 1 ] && [ -z "$external_cluster" ]; then
  "$ROOT_DIR/hack/cert-manager.sh" down
  OBJSTORES_BIND="$LC_BRIDGE_IP" "$ROOT_DIR/hack/objstores.sh" down
  "$ROOT_DIR/hack/local-cluster.sh" down
fi
exit $rc
