#!/usr/bin/env bash
# Builds the project's container images from static Go binaries and imports them into the local
# cluster's containerd. No base image, no registry: hack/tools/imagebuilder (go-containerregistry)
# writes single-layer linux/amd64 docker archives, `ctr images import` loads them.
#
#   hack/images.sh [all|pause|etcd|operator]...     (default: all)
#
#   pause      $LC_PAUSE_IMAGE: the pod sandbox (hack/tools/pause), what containerd and the kubelet use
#   etcd       quay.io/coreos/etcd:$ETCD_VERSION and :$ETCD_OLD_VERSION, etcd/etcdctl/etcdutl in
#              /usr/local/bin: the tags the EtcdCluster API defaults produce
#   operator   $IMG (default etcd-operator:dev): the three operator binaries from ./cmd/..., plus the
#              etcd $ETCD_VERSION etcdutl and etcdctl
#
# Archives are cached under $CACHE_DIR/images keyed by the sha256 of their inputs, and an import is
# skipped when containerd already holds that archive's image under the tag, so reruns are fast.
# Set NO_IMPORT=1 to only build the archives (no containerd needed).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

IMG="${IMG:-etcd-operator:dev}"
ETCD_REPOSITORY="${ETCD_REPOSITORY:-quay.io/coreos/etcd}"
IMAGES_DIR="$CACHE_DIR/images"
TOOLS_BIN="$CACHE_DIR/bin/tools"
BUILDER="$TOOLS_BIN/imagebuilder"
OPERATOR_USER=65532

build_tools() {
  mkdir -p "$TOOLS_BIN" "$IMAGES_DIR"
  (cd "$ROOT_DIR/hack/tools/imagebuilder" && CGO_ENABLED=0 go build -trimpath -o "$BUILDER" .)
}

# normalize REF: the name containerd stores for REF (docker's defaults for host and library/).
normalize() {
  local ref="$1" first="${1%%/*}"
  if [[ "$ref" != */* ]]; then
    ref="docker.io/library/$ref"
  elif [[ "$first" != *.* && "$first" != *:* && "$first" != localhost ]]; then
    ref="docker.io/$ref"
  fi
  echo "$ref"
}

# image NAME BUILDER_ARGS...: build the archive (if its inputs changed) and import it (if needed).
image() {
  local name="$1"
  shift
  local key tags=() args=("$@") i
  # The key covers the builder itself, every argument, and the content of every input file.
  key="$({
    sha256sum "$BUILDER" | cut -d' ' -f1
    printf '%s\n' "${args[@]}"
    for ((i = 0; i < ${#args[@]}; i++)); do
      if [ "${args[$i]}" = -file ]; then sha256sum "${args[$((i + 1))]%%=*}" | cut -d' ' -f1; fi
    done
  } | sha256sum | cut -c1-16)"
  for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[$i]}" = -tag ] && tags+=("${args[$((i + 1))]}")
  done
  local archive="$IMAGES_DIR/$name-$key.tar"
  if [ ! -f "$archive" ]; then
    log "building image $name (${tags[*]})"
    "$BUILDER" -out "$archive" "${args[@]}" >"$archive.id"
    # Keep only the newest archive of each image.
    find "$IMAGES_DIR" -maxdepth 1 -name "$name-*" ! -name "$name-$key.*" ! -name "$name-$key.tar" -delete
  fi
  [ "${NO_IMPORT:-}" = 1 ] && return 0
  local stamp="$archive.imported" want have t all_there=true
  want="$(cat "$stamp" 2>/dev/null || true)"
  for t in "${tags[@]}"; do
    have="$(lc_ctr images ls "name==$(normalize "$t")" 2>/dev/null | awk 'NR>1 {print $3}')"
    [ -n "$want" ] && [ "$have" = "$want" ] || all_there=false
  done
  if $all_there; then return 0; fi
  log "importing $name into containerd (${tags[*]})"
  lc_ctr images import "$archive" >/dev/null
  lc_ctr images ls "name==$(normalize "${tags[0]}")" | awk 'NR>1 {print $3}' >"$stamp"
}

pause_image() {
  (cd "$ROOT_DIR/hack/tools/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$TOOLS_BIN/pause" .)
  image pause -tag "$LC_PAUSE_IMAGE" -file "$TOOLS_BIN/pause=/pause" -entrypoint /pause
}

etcd_image() { # etcd_image VERSION
  local v="$1" dir
  "$ROOT_DIR/hack/build-etcd.sh" "$v"
  dir="$(etcd_bin_dir "$v")"
  image "etcd-$v" -tag "$ETCD_REPOSITORY:$v" \
    -file "$dir/etcd=/usr/local/bin/etcd" -file "$dir/etcdctl=/usr/local/bin/etcdctl" \
    -file "$dir/etcdutl=/usr/local/bin/etcdutl" -dir var/lib/etcd:0700 -entrypoint /usr/local/bin/etcd
}

operator_image() {
  local c missing=() out="$CACHE_DIR/build/operator-bin" version etcd_dir
  for c in etcd-operator backup-operator restore-operator; do
    [ -d "$ROOT_DIR/cmd/$c" ] || missing+=("cmd/$c")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "skipping the operator image $IMG: ${missing[*]} not in the tree yet"
    return 0
  fi
  version="$(cd "$ROOT_DIR" && git describe --tags --always --dirty 2>/dev/null || echo dev)"
  mkdir -p "$out"
  log "building the operator binaries ($version)"
  (cd "$ROOT_DIR" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/etcd-operator/etcd-operator/internal/version.Version=$version" \
    -o "$out/" ./cmd/etcd-operator ./cmd/backup-operator ./cmd/restore-operator)
  "$ROOT_DIR/hack/build-etcd.sh" "$ETCD_VERSION"
  etcd_dir="$(etcd_bin_dir "$ETCD_VERSION")"
  image operator -tag "$IMG" \
    -file "$out/etcd-operator=/usr/local/bin/etcd-operator" \
    -file "$out/backup-operator=/usr/local/bin/backup-operator" \
    -file "$out/restore-operator=/usr/local/bin/restore-operator" \
    -file "$etcd_dir/etcdutl=/usr/local/bin/etcdutl" -file "$etcd_dir/etcdctl=/usr/local/bin/etcdctl" \
    -user "$OPERATOR_USER:$OPERATOR_USER" -entrypoint /usr/local/bin/etcd-operator
}

main() {
  local what=("$@") w
  [ ${#what[@]} -gt 0 ] || what=(all)
  if [ "${NO_IMPORT:-}" != 1 ]; then
    lc_ensure_packages
    lc_ctr version >/dev/null 2>&1 || die_no_containerd
  fi
  # Concurrent runs would write the same archives and binaries: one at a time.
  mkdir -p "$IMAGES_DIR"
  exec 9>"$IMAGES_DIR/.lock"
  flock -w 900 9 || { log "ERROR: another hack/images.sh holds $IMAGES_DIR/.lock"; exit 1; }
  build_tools
  for w in "${what[@]}"; do
    case "$w" in
      pause) pause_image ;;
      etcd) etcd_image "$ETCD_VERSION" && etcd_image "$ETCD_OLD_VERSION" ;;
      operator) operator_image ;;
      all) pause_image && etcd_image "$ETCD_VERSION" && etcd_image "$ETCD_OLD_VERSION" && operator_image ;;
      *)
        echo "usage: $0 [all|pause|etcd|operator]..." >&2
        exit 2
        ;;
    esac
  done
}

die_no_containerd() {
  log "ERROR: the local cluster's containerd does not answer on $LC_CONTAINERD_SOCK: run hack/local-cluster.sh up (or NO_IMPORT=1 to only build)"
  exit 1
}

main "$@"
