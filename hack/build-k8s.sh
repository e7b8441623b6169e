#!/usr/bin/env bash
# Builds the Kubernetes binaries (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kube-proxy, kubectl) of $K8S_VERSION from the Go module proxy into $K8S_BIN_DIR.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces its staging modules with local
# paths. We write a throwaway module that requires it and replaces each staging module with its
# published v0.x.y twin instead. Usage: hack/build-k8s.sh [binary ...] (default: all).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALL=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
want=("$@"); [ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")

missing=()
for b in "${want[@]}"; do [ -x "$K8S_BIN_DIR/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi

staging_version="v0.${K8S_VERSION#v1.}"
mod_dir="$CACHE_DIR/build/k8s-$K8S_VERSION"
mkdir -p "$mod_dir" "$K8S_BIN_DIR"
log "building ${missing[*]} $K8S_VERSION (cold: several minutes)"

if [ ! -f "$mod_dir/go.sum" ]; then
  upstream_mod="$(cd "$mod_dir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
  {
    echo "module k8sbuild"
    echo
    sed -n 's/^go \(.*\)$/go \1/p' "$upstream_mod"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$upstream_mod" | sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' |
      grep -v -e sample-cli-plugin -e sample-controller |
      while read -r m; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$mod_dir/go.mod"
  {
    echo "//go:build tools"
    echo "package tools"
    echo "import ("
    for b in "${ALL[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done
    echo ")"
  } >"$mod_dir/tools.go"
  (cd "$mod_dir" && go mod tidy)
fi

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitTreeState=clean"
pkgs=(); for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
(cd "$mod_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$K8S_BIN_DIR/" "${pkgs[@]}")
log "built ${missing[*]} into $K8S_BIN_DIR"
