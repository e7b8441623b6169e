#!/usr/bin/env bash
# The end-to-end bench (issue 17, test/bench, build tags e2e,bench) on the local cluster: restore
# RTO into a new name and in place against the manual chain (download + etcdutl snapshot restore
# + one etcd, on this host), backup time, create -> Available, and day two on a 3-member cluster
# on volumes (rolling upgrade 3.5 -> 3.6, dead member replaced, scale 3 -> 5, each added
# member's container start -> ready voter); each figure BENCH_RUNS times (default 3), min and
# median, ratios to the baseline measured in the same run. Results go to BENCH_OUT (default
# bench/results/latest.md) and its .json, charted (time and memory against database size) into
# its .png by hack/tools/benchchart; a failed chart does not change the bench's exit code.
#
#   hack/bench-cluster.sh                                  # 64MiB,256MiB,1GiB x 3 runs
#   BENCH_SIZES=16MiB BENCH_RUNS=1 hack/bench-cluster.sh   # the smoke CI runs
#
# It runs TestBench only (-run '^TestBench$'), unless the arguments carry their own -run: the
# scale figure, TestBenchScale, has its own script (hack/bench-scale.sh, make bench-scale).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT_DIR" || exit 1
"$ROOT_DIR/hack/build-etcd.sh"
export BENCH_ETCD_BIN
BENCH_ETCD_BIN="$(etcd_bin_dir "$ETCD_VERSION")"
export BENCH_OUT="${BENCH_OUT:-$ROOT_DIR/bench/results/latest.md}"
mkdir -p "$(dirname "$BENCH_OUT")"
run=(-run '^TestBench$')
for arg in "$@"; do
  case "$arg" in -run | -run=* | --run | --run=* | -test.run | -test.run=*) run=() ;; esac
done
rc=0
E2E_PKGS=./test/bench/... E2E_TAGS=e2e,bench E2E_TIMEOUT="${BENCH_TIMEOUT:-120m}" hack/e2e.sh "${run[@]}" "$@" || rc=$?
if [ -f "${BENCH_OUT%.md}.json" ]; then
  go run ./hack/tools/benchchart -in "${BENCH_OUT%.md}.json" -out "${BENCH_OUT%.md}.png" ||
    log "WARNING: no chart of ${BENCH_OUT%.md}.json (hack/tools/benchchart failed)"
fi
exit "$rc"
