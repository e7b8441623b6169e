#!/usr/bin/env bash
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
