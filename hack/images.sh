#!/usr/bin/env bash
# Builds the project's container images from static Go binaries, with no base image and no
# registry: hack/tools/imagebuilder (go-containerregistry) writes single-layer images, which are
# imported into the local cluster's containerd (`ctr images import`) or pushed to a registry.
#
#   hack/images.sh [all|pause|etcd|operator|push|sync]...     (default: all)
#
#   pause      $LC_PAUSE_IMAGE: the pod sandbox (hack/tools/pause), what containerd and the kubelet use
#   etcd       quay.io/coreos/etcd:$ETCD_VERSION and :$ETCD_OLD_VERSION, etcd/etcdctl/etcdutl in
#              /usr/local/bin: the tags the EtcdCluster API defaults produce (linux/amd64)
#   operator   $IMG (default etcd-operator:dev): an OCI image index for $PLATFORMS (default the
#              host's linux/<arch>: the local cluster runs nothing else, and a cold build of a
#              second platform cost minutes), each image holding the three operator binaries from
#              ./cmd/... cross-compiled for its platform (CGO_ENABLED=0), the etcd $ETCD_VERSION
#              etcdutl and etcdctl, and the public CA roots at /etc/ssl/certs/ca-certificates.crt
#              (the binaries also embed them: golang.org/x/crypto/x509roots/fallback). The archive
#              is imported whole; containerd unpacks the node's platform.
#   push       build the operator image index as above ($PLATFORMS default linux/amd64 and
#              linux/arm64) and push it to $IMG (required, a
#              registry reference such as registry.example.com/etcd-operator:v0.2.0); credentials
#              come from the docker config (~/.docker/config.json), plain HTTP is used for
#              localhost, loopback and private addresses (PUSH_INSECURE=1 forces it)
#   sync       import every archive already imported into node 1 into the containerd of every
#              other node that lacks it (a node added or brought back after the images were
#              built; hack/local-cluster.sh runs it)
#
# With several nodes (LC_NODES>1), imports go to every node's containerd that answers
# (lc_node_socks in hack/local-cluster/env.sh); a node that is down gets them from `sync` when
# it comes back.
#
# The binaries carry VERSION, COMMIT and BUILD_DATE in --version (make exports them; default
# `git describe`, HEAD and the commit date). Archives are cached under $CACHE_DIR/images keyed
# by the sha256 of their inputs, and an import is skipped when containerd already holds that
# archive's image under the tag, so reruns are fast. NO_IMPORT=1 only builds the archives (no
# containerd needed); $IMAGES_DIR/operator.path then names the operator archive.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

IMG="${IMG:-etcd-operator:dev}"
PLATFORMS="${PLATFORMS:-}"
CA_ROOTS_PATH=/etc/ssl/certs/ca-certificates.crt
# shellcheck disable=SC2015 # the fallback is meant whether cd or git fails
VERSION="${VERSION:-$(cd "$ROOT_DIR" && git describe --tags --always --dirty 2>/dev/null || echo dev)}"
# shellcheck disable=SC2015 # as above
COMMIT="${COMMIT:-$(cd "$ROOT_DIR" && git rev-parse HEAD 2>/dev/null || true)}"
# shellcheck disable=SC2015 # as above
BUILD_DATE="${BUILD_DATE:-$(cd "$ROOT_DIR" && TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || true)}"
ETCD_REPOSITORY="${ETCD_REPOSITORY:-quay.io/coreos/etcd}"
# Archives go to IMAGES_DIR (hack/release.sh and the release tests use their own, so that they
# never replace the local cluster's); the locks always live in $CACHE_DIR/images, since the
# binaries under $CACHE_DIR/build are shared.
IMAGES_DIR="${IMAGES_DIR:-$CACHE_DIR/images}"
LOCK_DIR="$CACHE_DIR/images"
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

# input_sums SRC: the sha256 of a -file source, of each platform's file when it names {os}/{arch}.
input_sums() {
  local src="$1" p
  if [[ "$src" != *"{arch}"* && "$src" != *"{os}"* ]]; then
    sha256sum "$src" | cut -d' ' -f1
    return
  fi
  for p in $PLATFORMS; do
    local f="${src//\{os\}/${p%/*}}"
    sha256sum "${f//\{arch\}/${p#*/}}" | cut -d' ' -f1
  done
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
      if [ "${args[$i]}" = -file ]; then input_sums "${args[$((i + 1))]%%=*}"; fi
    done
  } | sha256sum | cut -c1-16)"
  for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[$i]}" = -tag ] && tags+=("${args[$((i + 1))]}")
  done
  local archive="$IMAGES_DIR/$name-$key.tar"
  LAST_ARCHIVE="$name-$key.tar"
  if [ ! -f "$archive" ]; then
    log "building image $name (${tags[*]})"
    "$BUILDER" -out "$archive" "${args[@]}" >"$archive.id"
    # Keep only the newest archive of each image.
    find "$IMAGES_DIR" -maxdepth 1 -name "$name-*" ! -name "$name-$key.*" ! -name "$name-$key.tar" -delete
  fi
  [ "${NO_IMPORT:-}" = 1 ] && return 0
  local stamp="$archive.imported" want have t all_there sock where=""
  for sock in $(lc_node_socks); do
    want="$(cat "$stamp" 2>/dev/null || true)"
    all_there=true
    for t in "${tags[@]}"; do
      have="$(LC_CONTAINERD_SOCK="$sock" lc_ctr images ls "name==$(normalize "$t")" 2>/dev/null | awk 'NR>1 {print $3}')"
      [ -n "$want" ] && [ "$have" = "$want" ] || all_there=false
    done
    if $all_there; then continue; fi
    [ "$sock" = "$LC_CONTAINERD_SOCK" ] || where=" of node $(basename "$(dirname "$(dirname "$sock")")")"
    log "importing $name into containerd$where (${tags[*]})"
    LC_CONTAINERD_SOCK="$sock" lc_ctr images import "$archive" >/dev/null
    [ "$sock" != "$LC_CONTAINERD_SOCK" ] ||
      lc_ctr images ls "name==$(normalize "${tags[0]}")" | awk 'NR>1 {print $3}' >"$stamp"
  done
}

# sync_images: every archive imported into node 1 (it has a .imported stamp) into the containerd
# of the other nodes that do not hold its image.
sync_images() {
  local stamp archive want sock
  for stamp in "$IMAGES_DIR"/*.tar.imported; do
    archive="${stamp%.imported}"
    [ -f "$archive" ] || continue
    want="$(cat "$stamp")"
    [ -n "$want" ] || continue
    for sock in $(lc_node_socks | tail -n +2); do
      LC_CONTAINERD_SOCK="$sock" lc_ctr images ls 2>/dev/null | awk 'NR>1 {print $3}' | grep -qxF -- "$want" && continue
      log "importing $(basename "$archive") into containerd of node $(basename "$(dirname "$(dirname "$sock")")")"
      LC_CONTAINERD_SOCK="$sock" lc_ctr images import "$archive" >/dev/null
    done
  done
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

# operator_binaries: the three operators and etcd's etcdctl and etcdutl for every platform of
# $PLATFORMS, under $CACHE_DIR/build/operator-bin/<os>_<arch>/ (the Go build cache makes reruns fast).
operator_binaries() {
  local out="$CACHE_DIR/build/operator-bin" p os arch pkg="github.com/etcd-operator/etcd-operator/internal/version"
  local ldflags="-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT -X $pkg.Date=$BUILD_DATE"
  "$ROOT_DIR/hack/build-etcd.sh" "$ETCD_VERSION"
  for p in $PLATFORMS; do
    os="${p%/*}" arch="${p#*/}"
    mkdir -p "$out/${os}_$arch"
    log "building the operator binaries ($VERSION, $p)"
    (cd "$ROOT_DIR" && CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -ldflags "$ldflags" \
      -o "$out/${os}_$arch/" ./cmd/etcd-operator ./cmd/backup-operator ./cmd/restore-operator)
    # etcdctl and etcdutl of the same release, from the module hack/build-etcd.sh set up.
    (cd "$CACHE_DIR/build/etcd-$ETCD_VERSION" && for c in etcdctl etcdutl; do
      CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -ldflags "-s -w" -o "$out/${os}_$arch/$c" "go.etcd.io/etcd/$c/v3"
    done)
  done
}

# operator_args: the imagebuilder arguments of the operator image (all platforms).
operator_args() {
  local bins="$CACHE_DIR/build/operator-bin/{os}_{arch}" c
  printf '%s\n' -platform "$(echo "$PLATFORMS" | tr ' ' ',')"
  for c in etcd-operator backup-operator restore-operator etcdctl etcdutl; do
    printf '%s\n' -file "$bins/$c=/usr/local/bin/$c"
  done
  printf '%s\n' -ca-roots "$CA_ROOTS_PATH" -user "$OPERATOR_USER:$OPERATOR_USER" \
    -entrypoint /usr/local/bin/etcd-operator \
    -label "org.opencontainers.image.title=etcd-operator" \
    -label "org.opencontainers.image.version=$VERSION" \
    -label "org.opencontainers.image.revision=$COMMIT" \
    -label "org.opencontainers.image.licenses=Apache-2.0"
  [ -z "$BUILD_DATE" ] || printf '%s\n' -created "$BUILD_DATE" -label "org.opencontainers.image.created=$BUILD_DATE"
}

have_operator_sources() {
  local c missing=()
  for c in etcd-operator backup-operator restore-operator; do
    [ -d "$ROOT_DIR/cmd/$c" ] || missing+=("cmd/$c")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "skipping the operator image $IMG: ${missing[*]} not in the tree yet"
  return 1
}

operator_image() {
  local args
  have_operator_sources || return 0
  operator_binaries
  mapfile -t args < <(operator_args)
  image operator -format oci -tag "$IMG" "${args[@]}"
  echo "$IMAGES_DIR/$LAST_ARCHIVE" >"$IMAGES_DIR/operator.path"
}

push_image() {
  local args start=$SECONDS
  # shellcheck disable=SC2015 # either test failing is the error
  [ "$IMG" != etcd-operator:dev ] && [[ "$IMG" == */* ]] ||
    { log "ERROR: set IMG to a registry reference, e.g. IMG=registry.example.com/etcd-operator:v0.2.0"; exit 2; }
  have_operator_sources || exit 1
  operator_binaries
  mapfile -t args < <(operator_args)
  [ "${PUSH_INSECURE:-}" = 1 ] && args+=(-insecure)
  log "pushing $IMG ($PLATFORMS)"
  "$BUILDER" -push "$IMG" "${args[@]}"
  log "pushed $IMG in $((SECONDS - start))s"
}

main() {
  local what=("$@") w
  [ ${#what[@]} -gt 0 ] || what=(all)
  if [ "${NO_IMPORT:-}" != 1 ] && [ "${what[*]}" != push ]; then
    lc_ensure_packages
    lc_ctr version >/dev/null 2>&1 || die_no_containerd
  fi
  if [ -z "$PLATFORMS" ]; then
    PLATFORMS="linux/$(go env GOARCH)"
    [ "${what[*]}" != push ] || PLATFORMS="linux/amd64 linux/arm64"
  fi
  mkdir -p "$IMAGES_DIR" "$LOCK_DIR"
  [ "${what[*]}" = sync ] || locked tools build_tools
  for w in "${what[@]}"; do
    case "$w" in
      pause) locked pause pause_image ;;
      etcd) locked etcd etcd_image "$ETCD_VERSION" && locked etcd etcd_image "$ETCD_OLD_VERSION" ;;
      operator) locked operator operator_image ;;
      push) locked operator push_image ;;
      sync) sync_images ;;
      all)
        locked pause pause_image && locked etcd etcd_image "$ETCD_VERSION" &&
          locked etcd etcd_image "$ETCD_OLD_VERSION" && locked operator operator_image
        ;;
      *)
        echo "usage: $0 [all|pause|etcd|operator|push|sync]..." >&2
        exit 2
        ;;
    esac
  done
}

# locked NAME COMMAND...: run COMMAND holding $LOCK_DIR/.lock-NAME. Concurrent runs would write
# the same archives and binaries, so one at a time per image; a slow operator build does not hold
# up the pause image the local cluster waits for.
locked() {
  local name="$1" rc=0
  shift
  exec 9>"$LOCK_DIR/.lock-$name"
  flock -w 1800 9 || { log "ERROR: another hack/images.sh holds $LOCK_DIR/.lock-$name"; exit 1; }
  "$@" || rc=$?
  exec 9>&-
  return $rc
}

die_no_containerd() {
  log "ERROR: the local cluster's containerd does not answer on $LC_CONTAINERD_SOCK: run hack/local-cluster.sh up (or NO_IMPORT=1 to only build)"
  exit 1
}

main "$@"
