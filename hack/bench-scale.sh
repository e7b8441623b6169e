#!/usr/bin/env bash
# The scale figure of the end-to-end bench (issue 17, test/bench/scale_test.go, build tags
# e2e,bench) on the local cluster: each operator's peak RSS and each controller's reconcile
# p50/p99 with BENCH_SCALE_CLUSTERS (default 50) one-member EtcdClusters and
# BENCH_SCALE_SCHEDULES (default 200) EtcdBackupSchedules, while they are created and then held
# for BENCH_SCALE_HOLD (default 3m); one run. Results go to BENCH_SCALE_OUT (default BENCH_OUT
# with -scale before .md, so bench/results/latest-scale.md) and its .json.
# It reads the operators' peak RSS from /proc, so it runs on the machine of the local cluster,
# as root. hack/bench-cluster.sh leaves this test out.
#
#   hack/bench-scale.sh                                                                 # 50, 200, 3m
#   BENCH_SCALE_CLUSTERS=3 BENCH_SCALE_SCHEDULES=6 BENCH_SCALE_HOLD=30s hack/bench-scale.sh   # the smoke CI runs
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT_DIR" || exit 1
export BENCH_OUT="${BENCH_OUT:-$ROOT_DIR/bench/results/latest.md}"
export BENCH_SCALE_OUT="${BENCH_SCALE_OUT:-${BENCH_OUT%.md}-scale.md}"
mkdir -p "$(dirname "$BENCH_SCALE_OUT")"
E2E_PKGS=./test/bench/... E2E_TAGS=e2e,bench E2E_TIMEOUT="${BENCH_TIMEOUT:-60m}" hack/e2e.sh -run '^TestBenchScale$' "$@"
