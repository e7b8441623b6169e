#!/usr/bin/env bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Shared settings for the hack/ scripts. Source it; do not run it.
# Every version the project builds is pinned here, and every binary is cached under
# $CACHE_DIR keyed by that version, so a second run starts in seconds.
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${CACHE_DIR:-$ROOT_DIR/.cache}"

K8S_VERSION="${K8S_VERSION:-v1.33.13}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
# The 3.5 release used for upgrade tests.
ETCD_OLD_VERSION="${ETCD_OLD_VERSION:-v3.5.35}"

K8S_BIN_DIR="$CACHE_DIR/bin/k8s-$K8S_VERSION"

etcd_bin_dir() { echo "$CACHE_DIR/bin/etcd-$1"; }

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# longest_first TAGS PATTERN PKG...: the packages of PATTERN (go list with build tags TAGS),
# the given ones first, in that order, then the rest. go test starts packages in the order it
# is given them, -p (the cores) at a time: a long package started last is the whole run's tail.
longest_first() {
  local tags=$1 pattern=$2 all p
  shift 2
  all=$(go list -tags "$tags" "$pattern") || return 1
  for p in "$@"; do
    if grep -qx "$p" <<<"$all"; then echo "$p"; fi
  done
  while read -r p; do
    if ! printf '%s\n' "$@" | grep -qx "$p"; then echo "$p"; fi
  done <<<"$all"
}

# timed STEP COMMAND...: run, log the wall time, return the command's exit code. A step that ran
# before says how long it took then; a long step (a first run builds Kubernetes, etcd and the
# tools from source, minutes with little output) logs that it is still running every
# TIMED_HEARTBEAT seconds (default 60 when stderr is a terminal, else 0: never; CI's log has the
# step table at its end, and a line a minute from each nested step was noise), against that time. The times of the steps that
# passed are kept in $CACHE_DIR/step-times.tsv ("STEP<TAB>seconds", the last run of each).
timed() {
  local step="$1" start=$SECONDS rc=0 last="" beat=${TIMED_HEARTBEAT:-0} hb="" took
  if [ -z "${TIMED_HEARTBEAT:-}" ] && [ -t 2 ]; then beat=60; fi
  shift
  last=$(awk -F'\t' -v s="$step" '$1 == s { t = $2 } END { print t }' "$CACHE_DIR/step-times.tsv" 2>/dev/null || true)
  if [ "$beat" -gt 0 ]; then
    # sleep gets no pipe of ours: killed, this loop leaves nothing holding a caller's $(...)
    # and it ends by itself when this script is gone (killed before it could kill the loop)
    # shellcheck disable=SC2217 # the redirections are so that sleep holds none of our fds
    (while sleep "$beat" </dev/null >/dev/null 2>&1 && kill -0 "$$" 2>/dev/null; do
      log "$step: still running, $(((SECONDS - start) / 60)) min so far${last:+ (${last}s the last time)}"
    done) &
    hb=$!
  fi
  "$@" || rc=$?
  if [ -n "$hb" ]; then kill "$hb" 2>/dev/null || true; fi
  took=$((SECONDS - start))
  log "$step took ${took}s${last:+ (${last}s the last time)}"
  if [ "$rc" -eq 0 ] && mkdir -p "$CACHE_DIR" 2>/dev/null; then
    # one writer at a time (steps run side by side), the step's earlier line replaced
    (
      flock 7
      { awk -F'\t' -v s="$step" '$1 != s' "$CACHE_DIR/step-times.tsv" 2>/dev/null || true; printf '%s\t%s\n' "$step" "$took"; } >"$CACHE_DIR/step-times.tsv.tmp"
      mv "$CACHE_DIR/step-times.tsv.tmp" "$CACHE_DIR/step-times.tsv"
    ) 7>>"$CACHE_DIR/step-times.lock" || true
  fi
  return "$rc"
}

# cpu_ticks: the machine's CPU time so far as "busy total" (jiffies of every CPU, /proc/stat;
# idle and iowait are not busy).
cpu_ticks() {
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat 2>/dev/null || echo "0 0"
}

# ci_step STEP COMMAND...: timed, and a row "STEP<TAB>seconds<TAB>exit code<TAB>CPU busy %"
# appended to $CI_STEPS when it is set (.ci/run prints them as a table at its end, red or
# green). CPU busy is the whole machine's over the step, beside-steps included: a step well
# under 100 % waits more than it computes, and work could run beside it.
ci_step() {
  local step="$1" start=$SECONDS rc=0 b0 t0 b1 t1
  shift
  read -r b0 t0 < <(cpu_ticks)
  timed "$step" "$@" || rc=$?
  read -r b1 t1 < <(cpu_ticks)
  if [ -n "${CI_STEPS:-}" ]; then
    printf '%s\t%s\t%s\t%s\n' "$step" "$((SECONDS - start))" "$rc" "$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))" >>"$CI_STEPS"
  fi
  return "$rc"
}

# local_stack_up brings up (idempotent, cached) what e2e tests and the demo run on: the local
# cluster, the images, and the object stores on the bridge address where pods reach them; it
# exports KUBECONFIG, E2E_CLUSTER_DNS and E2E_OBJSTORES_ENV. The caller sources
# hack/local-cluster/env.sh first and deploys the operators (hack/deploy.sh apply) after.
local_stack_up() {
  timed "local cluster up" "$ROOT_DIR/hack/local-cluster.sh" up || return
  timed "images" "$ROOT_DIR/hack/images.sh" all || return
  timed "object stores on $LC_BRIDGE_IP" env OBJSTORES_BIND="$LC_BRIDGE_IP" "$ROOT_DIR/hack/objstores.sh" up || return
  export KUBECONFIG="$LC_KUBECONFIG"
  export E2E_CLUSTER_DNS="${E2E_CLUSTER_DNS:-$LC_BRIDGE_IP:53}"
  export E2E_OBJSTORES_ENV="${E2E_OBJSTORES_ENV:-$CACHE_DIR/objstores/pods.env}"
}
