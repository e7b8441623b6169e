#!/usr/bin/env bash
# The benchmarks against real servers on loopback (make bench):
#  1. bench/backend: pkg/backend uploads against the raw SDKs on MinIO, fake-gcs-server, Azurite
#     and the filesystem -> bench/results/backend.md. Exits non-zero when its memory assertions
#     fail (the results file is still written).
#  2. bench/snapshot: a backup (pkg/snapshot.Take into MinIO) against `etcdctl snapshot save` +
#     upload and against the raw snapshot read, with the backup's peak RSS, at
#     BENCH_BACKUP_SIZES (default 64MiB,256MiB,1GiB,4GiB) x BENCH_RUNS (3) ->
#     bench/results/backup.md (BENCH_BACKUP_OUT) and .json. Then what compression (zstd) and
#     encryption (age) cost: the backup through backend.WithEncoding as zstd, age and zstd+age,
#     and a restore's read of each object, against the plain backup and read of the same run,
#     at BENCH_ENCODING_SIZES (default 256MiB,1GiB; set it empty to skip) on BENCH_ENCODING_DATA
#     (json: Kubernetes-like JSON values, about 4-5x compressible, the default; random: the
#     incompressible values of the plain rows). About 20 minutes.
#  3. bench/capture: continuous capture (pkg/capture) against the same etcd without it: write
#     p50/p99 without capture, with its watch only and with a capturer, the capturer's peak RSS,
#     segment upload lag, and a restore to a point (backup of BENCH_CAPTURE_SIZE, default 256MiB,
#     + BENCH_CAPTURE_CHANGES, default 100000, replayed) against a full restore ->
#     bench/results/capture.md (BENCH_CAPTURE_OUT) and .json. About 5 minutes (7 with
#     BENCH_CAPTURE_SIZE=256MiB,1GiB).
# Usage: hack/bench.sh [flags for bench/backend, e.g. -providers s3 -sizes 128MiB,1GiB]
#        BENCH_SKIP_BACKEND=1 hack/bench.sh    # without bench/backend
#        BENCH_SKIP_BACKUP=1, BENCH_SKIP_CAPTURE=1 skip bench/snapshot, bench/capture
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$ROOT_DIR/hack/objstores.sh" up
# shellcheck disable=SC1091
source "$CACHE_DIR/objstores/env"

out="$ROOT_DIR/bench/results/backend.md"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"

cd "$ROOT_DIR"
"$ROOT_DIR/hack/build-etcd.sh"
export ETCD_BIN_DIR BENCH_BACKUP_OUT="${BENCH_BACKUP_OUT:-$ROOT_DIR/bench/results/backup.md}"
ETCD_BIN_DIR="$(etcd_bin_dir "$ETCD_VERSION")"
bench_rc=0
if [ -z "${BENCH_SKIP_BACKUP:-}" ]; then
  log "backup bench (bench/snapshot) -> $BENCH_BACKUP_OUT"
  go test -tags bench -count=1 -timeout 120m -run '^TestBackupBench$' -v ./bench/snapshot/ || bench_rc=$?
fi
if [ -z "${BENCH_SKIP_CAPTURE:-}" ]; then
  export BENCH_CAPTURE_OUT="${BENCH_CAPTURE_OUT:-$ROOT_DIR/bench/results/capture.md}"
  log "capture bench (bench/capture) -> $BENCH_CAPTURE_OUT"
  capture_rc=0
  go test -tags bench -count=1 -timeout 60m -run '^TestCaptureBench$' -v ./bench/capture/ || capture_rc=$?
  if [ "$bench_rc" -eq 0 ]; then bench_rc=$capture_rc; fi
fi
if [ -n "${BENCH_SKIP_BACKEND:-}" ]; then exit "$bench_rc"; fi

go build -o "$work/bench-backend" ./bench/backend
log "running bench/backend $*"
start=$SECONDS
rc=0
"$work/bench-backend" "$@" >"$work/table.md" || rc=$?
elapsed=$((SECONDS - start))

cpu="$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
mem_gib="$(awk '/^MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)"
{
  echo "# pkg/backend upload benchmark"
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- Machine: $(nproc) cores ($cpu), ${mem_gib} GiB RAM, $(uname -sr), $(go version | cut -d' ' -f3)"
  echo "- Servers on loopback: $("$ROOT_DIR/hack/objstores.sh" versions)"
  echo "- Command: \`hack/bench.sh $*\` (${elapsed} s; the machine is shared, so absolute speeds are noisy)"
  echo
  echo "Each row uploads a generated stream (a repeated 1 MiB random block, never held in memory)"
  echo "twice through the same server: first with the raw SDK at the same part size and concurrency"
  echo "(baseline), then through pkg/backend. Peak heap is the highest allocated Go heap"
  echo "(runtime/metrics, sampled every ms, garbage included); live heap is what survived the last GC;"
  echo "peak RSS is the process's VmHWM. The bound is the provider's documented upload buffer memory."
  echo "The program fails if a peak heap exceeds bound + 32 MiB, or if the largest size's peak exceeds"
  echo "1.5 x the smallest's + 16 MiB."
  echo
  cat "$work/table.md"
  if [ "$rc" -ne 0 ]; then
    echo
    echo "**The benchmark FAILED (exit $rc).**"
  fi
} >"$out"
log "results in $out"
if [ "$rc" -eq 0 ]; then rc=$bench_rc; fi
exit "$rc"
