#!/usr/bin/env bash
# The chaos suite (issue 15, test/chaos, build tags e2e,chaos) on the local cluster: the smoke
# fault kinds (CHAOS_ALL=1: every kind) CHAOS_RUNS times (default 1: the smoke run CI does) under
# a bounded load, each run with a seed it prints. Needs root and the local cluster: some kinds
# kill its processes (hack/local-cluster.sh kill), MinIO (hack/objstores.sh kill) or cut a
# member's network with iptables in its pod's network namespace. Results are appended to
# .cache/chaos/results.jsonl and summed up per kind in .cache/chaos/report.md; a failed run
# keeps its objects, events and operator logs under .cache/chaos/<kind>-<seed>/.
#
#   hack/chaos.sh                          # smoke: one run of each smoke kind
#   CHAOS_ALL=1 CHAOS_RUNS=5 hack/chaos.sh # make test-chaos
#   CHAOS_ALL=1 CHAOS_SEED=123 CHAOS_RUNS=1 hack/chaos.sh -run 'TestChaos/apiserver-restarted'
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT_DIR" || exit 1
mkdir -p "$CACHE_DIR/chaos"
: > "$CACHE_DIR/chaos/results.jsonl"
export CHAOS_RUNS="${CHAOS_RUNS:-1}"
rc=0
E2E_PKGS=./test/chaos/... E2E_TAGS=e2e,chaos E2E_TIMEOUT="${CHAOS_TIMEOUT:-$((30 * CHAOS_RUNS + 30))m}" hack/e2e.sh "$@" || rc=$?
go run ./hack/tools/chaosreport -in "$CACHE_DIR/chaos/results.jsonl" -out "$CACHE_DIR/chaos/report.md" && cat "$CACHE_DIR/chaos/report.md"
exit $rc
