#!/usr/bin/env bash
# Builds etcd, etcdctl and etcdutl of one release from the Go module proxy into
# $CACHE_DIR/bin/etcd-<version>. Usage: hack/build-etcd.sh [version] (default $ETCD_VERSION).
#
# The etcd modules replace each other with relative paths, so they cannot be `go install`ed
# directly; a throwaway module that requires them (replaces of dependencies are ignored) can
# build their main packages, and a three-line main wraps etcdmain.Main for the server.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

version="${1:-$ETCD_VERSION}"
out="$(etcd_bin_dir "$version")"
if [ -x "$out/etcd" ] && [ -x "$out/etcdctl" ] && [ -x "$out/etcdutl" ]; then exit 0; fi

mod_dir="$CACHE_DIR/build/etcd-$version"
mkdir -p "$mod_dir/etcd" "$out"
log "building etcd $version"
if [ ! -f "$mod_dir/go.sum" ]; then
  cat >"$mod_dir/go.mod" <<MOD
module etcdbuild

go 1.24

require (
	go.etcd.io/etcd/server/v3 $version
	go.etcd.io/etcd/etcdctl/v3 $version
	go.etcd.io/etcd/etcdutl/v3 $version
)
MOD
  cat >"$mod_dir/etcd/main.go" <<'GO'
// Command etcd is the etcd server, built from the server module's etcdmain package.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  cat >"$mod_dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
GO
  (cd "$mod_dir" && go mod tidy)
fi
(cd "$mod_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" ./etcd &&
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcdctl" go.etcd.io/etcd/etcdctl/v3 &&
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcdutl" go.etcd.io/etcd/etcdutl/v3)
# Not `| head -1`: under pipefail, head exiting early fails the script with SIGPIPE (141).
version_line="$("$out/etcd" --version)"
echo "${version_line%%$'\n'*}" >&2
