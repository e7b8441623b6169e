#!/usr/bin/env bash
# The end-to-end bench (issue 17, test/bench, build tags e2e,bench) on the local cluster: restore
# RTO into a new name and in place against the manual chain (download + etcdutl snapshot restore
# + one etcd, on this host), backup time, create -> Available; each figure BENCH_RUNS times
# (default 3), min and median, ratios to the baseline measured in the same run. Results go to
# BENCH_OUT (default bench/results/latest.md) and its .json.
#
#   hack/bench-cluster.sh                                  # 64MiB,256MiB,1GiB x 3 runs
#   BENCH_SIZES=16MiB BENCH_RUNS=1 hack/bench-cluster.sh   # the smoke CI runs
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT_DIR" || exit 1
"$ROOT_DIR/hack/build-etcd.sh"
export BENCH_ETCD_BIN
BENCH_ETCD_BIN="$(etcd_bin_dir "$ETCD_VERSION")"
export BENCH_OUT="${BENCH_OUT:-$ROOT_DIR/bench/results/latest.md}"
mkdir -p "$(dirname "$BENCH_OUT")"
E2E_PKGS=./test/bench/... E2E_TAGS=e2e,bench E2E_TIMEOUT="${BENCH_TIMEOUT:-120m}" hack/e2e.sh "$@"
