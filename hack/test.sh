#!/usr/bin/env bash
# The project's test command (make test). Usage: hack/test.sh [all|unit]
#   unit: unit tests and envtest integration tests (real kube-apiserver + etcd built by hack/).
#   all:  unit, plus the backend acceptance tests against MinIO, fake-gcs-server and Azurite
#         (started by hack/objstores.sh; skipping them is an error), plus the e2e suite on the
#         local Kubernetes cluster (hack/e2e.sh), plus one run of each chaos fault kind
#         (hack/chaos.sh), plus one run of each end-to-end bench figure at 16 MiB
#         (hack/bench-cluster.sh; results in .cache/bench/smoke.md, no target enforced), the
#         upgrade test from the previous release (hack/upgrade-test.sh),
#         one run of the backup bench at 16 MiB (bench/snapshot; .cache/bench/backup-smoke.md),
#         and every fuzz target for 1000 inputs (make fuzz FUZZTIME=1000x, beside the bench smokes).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mode="${1:-all}"
cd "$ROOT_DIR"

KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
log "envtest binaries: $KUBEBUILDER_ASSETS"

if [ "$mode" = all ]; then
  # cert-manager is not built or run here: TestCertManagerTLS is in the e2e long tier
  # (make test-e2e-long builds and runs it).
  mkdir -p "$CACHE_DIR/e2e"
  # Failed e2e, chaos and bench tests with their last lines (hack/e2e.sh), repeated at the end.
  export E2E_FAILURES="$CACHE_DIR/e2e/failures.txt"
  : >"$E2E_FAILURES"
  # The teardown self-test (hack/local-cluster/selftest.sh: its own namespaces, mostly waits, 43 s)
  # runs beside the unit tests too; it must pass before the first local-cluster up (e2e step).
  ci_step "local cluster teardown self-test (beside the unit tests)" hack/local-cluster/selftest.sh >"$CACHE_DIR/selftest.log" 2>&1 &
  selftest=$!
  ci_step "object stores" hack/objstores.sh up
  # shellcheck disable=SC1090,SC1091
  source "$CACHE_DIR/objstores/env"
  export OBJSTORES_REQUIRED=1
fi

# The corpus tests (internal/kvhash, internal/restoreseed) also run etcd 3.5 and its etcdutl.
ci_step "etcd $ETCD_OLD_VERSION" hack/build-etcd.sh "$ETCD_OLD_VERSION"

# The chart tests run the pinned helm; build it (cached in bin/) before any test's clock starts.
ci_step helm hack/helm.sh install >/dev/null

# hack/releasetest builds the release's operator binaries, etcdctl/etcdutl and kubectl-etcd for both
# platforms. On a cold machine that is minutes of compiling, which beside the test packages
# starved envtest (docs/flakes.md, 2026-11-28); compiled here first, alone, the tests only link.
# Warm, this step is a few seconds of cache checks.
release_packages() {
  local arch
  "$ROOT_DIR/hack/build-etcd.sh" "$ETCD_VERSION" >/dev/null
  for arch in amd64 arm64; do
    # go list -export compiles every package into the build cache (as hack/images.sh's go build
    # does: same flags, -ldflags only change the link) and links nothing.
    CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go list -export -trimpath -deps \
      ./cmd/etcd-operator ./cmd/backup-operator ./cmd/restore-operator ./cmd/kubectl-etcd >/dev/null
    (cd "$CACHE_DIR/build/etcd-$ETCD_VERSION" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go list -export -trimpath -deps \
      go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3 >/dev/null)
  done
}
ci_step "release platforms' packages compiled" release_packages

log "go test ./... ($mode)"
# 45m: hack/releasetest took 28 min on a cold machine (first cross-compiles of the images under load).
# The longest packages first (CI rehearsal figures in seconds: integration 164, etcdcluster 139,
# etcdbackup 89, releasetest 78, factory 61, etcdrestore 59, restoreseed 50): started last,
# one of them would run alone at the end.
mod=$(go list -m)
mapfile -t pkgs < <(longest_first "" ./... "$mod/test/integration" "$mod/internal/controller/etcdcluster" \
  "$mod/internal/controller/etcdbackup" "$mod/hack/releasetest" "$mod/pkg/backend/factory" \
  "$mod/internal/controller/etcdrestore" "$mod/internal/restoreseed")
if [ "${#pkgs[@]}" -lt 2 ] && [ -z "${E2E_PKGS:-}" ]; then
  log "go list found no packages to test"
  exit 1
fi
# What go test ./... does, in two steps (hack/testbin.sh, docs/ci.md): every test binary linked
# first, one per core, and only when its inputs changed (go test links all 46 again on each run:
# about 350 CPU-seconds, in the slots of tests that mostly wait); then TEST_PARALLEL packages at
# a time. Three: with no compile or link beside them the packages wait on kube-apiserver, etcd and
# the object stores more than they compute (go test's two at a time kept the machine 65 % busy).
TEST_PARALLEL="${TEST_PARALLEL:-3}"
ci_step "unit and envtest: test binaries linked" hack/testbin.sh link "${pkgs[@]}"
ci_step "unit and envtest: $TEST_PARALLEL packages at a time" hack/testbin.sh run "$TEST_PARALLEL" "${pkgs[@]}"

if [ "$mode" = all ]; then
  rc=0
  log "backup bench smoke: 16 MiB, one run (make bench measures 64 MiB to 4 GiB, 3 runs)"
  hack/build-etcd.sh
  ETCD_BIN_DIR="$(etcd_bin_dir "$ETCD_VERSION")" ci_step "backup bench smoke" env BENCH_BACKUP_SIZES=16MiB BENCH_ENCODING_SIZES=16MiB BENCH_RUNS=1 BENCH_BACKUP_OUT="$CACHE_DIR/bench/backup-smoke.md" \
    go test -tags bench -count=1 -run '^TestBackupBench$' ./bench/snapshot/ || rc=$?
  # down removes only what the local cluster made, also when an earlier clone's cluster was left
  # behind on a reused machine (the CI failure of 2026-11-28): checked in a sandbox, beside the
  # unit tests.
  log "local cluster teardown self-test (ran beside the unit tests):"
  wait "$selftest" || rc=$?
  cat "$CACHE_DIR/selftest.log"
  log "e2e on the local cluster"
  ci_step "e2e (local cluster up, images, deploy, tests)" hack/e2e.sh || rc=$?
  log "upgrade: the previous release with restores in flight, upgraded to this tree's (make test-upgrade)"
  ci_step "upgrade from the previous release" hack/upgrade-test.sh || rc=$?
  log "chaos smoke: one run of each smoke fault kind (make test-chaos runs every kind five times)"
  # -parallel 3: the three smoke kinds marked beside (test/chaos) run together, after the rest.
  CHAOS_RUNS=1 ci_step "chaos smoke" hack/chaos.sh -parallel 3 || rc=$?
  # Every fuzz target briefly (their seed corpora already ran as tests above), beside the bench
  # smokes: those mostly wait on pods (the cluster bench smoke alone keeps the machine 44-48 %
  # busy), the fuzzers only compute. A count, not a duration: a -fuzztime duration can end in a
  # spurious "context deadline exceeded" failure (a race in Go's fuzz coordinator,
  # golang/go#75804, fixed in Go 1.27).
  log "fuzz: every fuzz target, 1000 inputs each (make fuzz runs 10 s each), beside the bench smokes; output in $CACHE_DIR/fuzz.log"
  ci_step "fuzz, 1000 inputs a target (beside the bench smokes)" make fuzz FUZZTIME=1000x >"$CACHE_DIR/fuzz.log" 2>&1 &
  fuzz=$!
  log "bench smoke: one run of each figure at 16 MiB (make bench-cluster measures 64 MiB to 1 GiB, 3 runs)"
  BENCH_SIZES=16MiB BENCH_RUNS=1 BENCH_DAY2_EXTRA=0 BENCH_CREATE_SIZES=3 BENCH_OUT="$CACHE_DIR/bench/smoke.md" ci_step "cluster bench smoke" hack/bench-cluster.sh || rc=$?
  BENCH_SCALE_CLUSTERS=3 BENCH_SCALE_SCHEDULES=6 BENCH_SCALE_HOLD=10s BENCH_OUT="$CACHE_DIR/bench/smoke.md" ci_step "scale bench smoke" hack/bench-scale.sh || rc=$? # results in smoke-scale.md
  log "fuzz (ran beside the bench smokes):"
  wait "$fuzz" || rc=$?
  cat "$CACHE_DIR/fuzz.log"
  if [ -s "$E2E_FAILURES" ]; then
    log "failed tests on the local cluster, with their last lines (namespace dumps in $CACHE_DIR/e2e/dumps):"
    cat "$E2E_FAILURES" >&2
  fi
  exit $rc
fi
