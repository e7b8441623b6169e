#!/usr/bin/env bash
# Benchmarks pkg/backend uploads against the real object-store servers and writes the results,
# with the date and the machine, to bench/results/backend.md.
# Usage: hack/bench.sh [flags for bench/backend, e.g. -providers s3 -sizes 128MiB,1GiB]
# Exits non-zero when the benchmark's memory assertions fail (the results file is still written).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$ROOT_DIR/hack/objstores.sh" up
# shellcheck disable=SC1091
source "$CACHE_DIR/objstores/env"

out="$ROOT_DIR/bench/results/backend.md"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"

cd "$ROOT_DIR"
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
exit "$rc"
