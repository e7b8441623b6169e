#!/usr/bin/env bash
# Test binaries linked once per their inputs, then run several packages at a time: what
# `go test` does, minus the relinking and with the links out of the test slots.
#
#   hack/testbin.sh link PKG...                           link each package's test binary
#   hack/testbin.sh run PARALLEL PKG... [-- GO-TEST-FLAGS] run them, PARALLEL packages at a time
#   hack/testbin.sh path PKG                              the linked binary of one package
#
# PKG: import paths or patterns (./test/e2e/...); run starts them in the order given (the longest
# first). TESTBIN_TAGS: build tags (go test -tags). TESTBIN_BUILDFLAGS: more go test build flags
# (hack/fuzz.sh: "-fuzz ." for coverage-instrumented binaries), part of the key. GO-TEST-FLAGS: go test's flags for the test
# binary (-run X, -v, -parallel N, -timeout D, -count N, -skip X, -failfast, -short, -list X), as
# `go test` passes them; any other flag is refused.
#
# Why (docs/ci.md): `go test` links every test binary again on each run (it caches results, not
# binaries), about 8 CPU-seconds each for the packages with the Kubernetes and cloud clients, 353
# CPU-seconds for the 46 packages of `go test ./...`; and links share go test's -p slots with
# tests that mostly wait, so the machine sat 65 % busy. Here the links run first, one per core,
# and only when a binary's inputs changed; then the runs, which wait on kube-apiserver, etcd and
# the object stores, go PARALLEL at a time.
#
# A binary's key is the sha256 of the Go toolchain, the build environment and tags, and the build
# ID of every package linked into it (`go list -test -deps -export`: a build ID changes with the
# package's sources, embedded files, flags and its dependencies' content), so a change to
# anything in the binary links it again. A package's binaries of other keys are removed when it
# is linked. Binaries live under $TESTBIN_DIR (default .cache/testbin/<tags>/<package>-<key>/),
# named <last element of the package>.test as go test names them.
#
# `run` prints what `go test` prints: "ok  pkg  12.3s" for a package that passed (with -v, its
# whole output first), the whole output and "FAIL pkg" for one that failed; a single package's
# output streams as it runs. Each binary runs in its package's directory with -test.count=1,
# -test.paniconexit0 and -test.timeout TESTBIN_TIMEOUT (default 45m), as `go test -count=1`. go
# test's built-in vet checks are not run here: make lint runs go vet with every analyzer.
# TESTBIN_MODULE_DIR (default this repository): the module whose packages are meant (its tests use
# a module of their own, hack/testbintest).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${TESTBIN_MODULE_DIR:-$ROOT_DIR}"

TESTBIN_TAGS="${TESTBIN_TAGS:-}"
TESTBIN_BUILDFLAGS="${TESTBIN_BUILDFLAGS:-}"
tagdir=${TESTBIN_TAGS:-untagged}
TESTBIN_DIR="${TESTBIN_DIR:-$CACHE_DIR/testbin/${tagdir//[^A-Za-z0-9._-]/_}}"
TESTBIN_TIMEOUT="${TESTBIN_TIMEOUT:-45m}"
MOD=$(go list -m)

# name PKG: a package's file name under $TESTBIN_DIR
name() {
  local n=${1#"$MOD"/}
  echo "${n//[^A-Za-z0-9._-]/_}"
}

# keys PKG...: lines "import-path<TAB>package-dir<TAB>binary-path" for each package with tests.
keys() {
  local env_id list pkg dir inputs
  env_id=$( {
    go version
    go env GOOS GOARCH GOAMD64 GOARM64 CGO_ENABLED GOFLAGS GOEXPERIMENT CC
    echo "tags=$TESTBIN_TAGS buildflags=$TESTBIN_BUILDFLAGS"
  } | sha256sum | cut -c1-16)
  list=$(mktemp)
  # The package list also compiles everything into the build cache (a link needs it anyway).
  go list -tags "$TESTBIN_TAGS" -test -deps -export \
    -f '{{.ImportPath}}|{{.BuildID}}|{{.Dir}}|{{join .Deps ","}}' "$@" >"$list"
  # one line per test binary: "<package><TAB><dir><TAB><its inputs>"
  while IFS=$'\t' read -r pkg dir inputs; do
    printf '%s\t%s\t%s/%s-%s/%s.test\n' "$pkg" "$dir" "$TESTBIN_DIR" "$(name "$pkg")" \
      "$(printf '%s %s' "$env_id" "$inputs" | sha256sum | cut -c1-24)" "${pkg##*/}"
  done < <(awk -F'|' '
    { id[$1] = $2; d[$1] = $3; deps[$1] = $4; order[NR] = $1 }
    END {
      for (i = 1; i <= NR; i++) {
        main = order[i]
        # a test main is "<import path>.test"; its package variants are "<path> [<path>.test]"
        if (main !~ /\.test$/ || index(main, " ") > 0) continue
        pkg = substr(main, 1, length(main) - 5)
        s = main "=" id[main]
        n = split(deps[main], ds, ",")
        for (j = 1; j <= n; j++) s = s " " ds[j] "=" id[ds[j]]
        print pkg "\t" d[pkg] "\t" s
      }
    }' "$list")
  rm -f "$list"
}

link() {
  local want linked=0 cached=0 pkg dir bin n todo=()
  mkdir -p "$TESTBIN_DIR"
  want=$(keys "$@")
  [ -n "$want" ] || { log "no test files in $*"; return 0; }
  while IFS=$'\t' read -r pkg dir bin; do
    if [ -x "$bin" ]; then cached=$((cached + 1)); else todo+=("$pkg" "$bin"); linked=$((linked + 1)); fi
  done <<<"$want"
  if [ "${#todo[@]}" -gt 0 ]; then
    # shellcheck disable=SC2016 # expanded by the inner shell
    # shellcheck disable=SC2086 # TESTBIN_BUILDFLAGS is a list of flags
    printf '%s\0' "${todo[@]}" | xargs -0 -n 2 -P "$(nproc)" sh -c \
      'mkdir -p "${2%/*}" && go test -tags "$0" $TESTBIN_BUILDFLAGS -c -o "$2.tmp" "$1" && mv "$2.tmp" "$2"' "$TESTBIN_TAGS"
  fi
  while IFS=$'\t' read -r pkg dir bin; do
    n=$(name "$pkg")
    printf '%s\t%s\t%s\n' "$pkg" "$dir" "$bin" >"$TESTBIN_DIR/$n.current"
    # the package's binaries of other keys (a few GB after a few commits otherwise); the key's 24
    # characters spelled out, so that package a's cleanup never matches a package named a-b
    find "$TESTBIN_DIR" -mindepth 1 -maxdepth 1 -type d -name "$n-$(printf '?%.0s' {1..24})" ! -path "${bin%/*}" -exec rm -rf {} +
  done <<<"$want"
  log "test binaries (${TESTBIN_TAGS:-no tags}): $linked linked, $cached unchanged since an earlier run"
}

# binary_flags GO-TEST-FLAG...: go test's flags as the test binary takes them (-run X -> -test.run X)
binary_flags() {
  local a
  for a in "$@"; do
    case "$a" in --*) a=${a#-} ;; esac
    case "$a" in
      -test.*) echo "$a" ;;
      -run | -run=* | -v | -v=* | -parallel | -parallel=* | -timeout | -timeout=* | -count | -count=* | \
        -skip | -skip=* | -failfast | -short | -list | -list=* | -shuffle=* | -cpu | -cpu=*)
        echo "-test.${a#-}" ;;
      -*) log "hack/testbin.sh: go test flag $a is not passed to test binaries"; return 2 ;;
      *) echo "$a" ;; # a flag's value
    esac
  done
}

run_one() { # run_one STREAM VERBOSE FLAG... PKG DIR BIN: run one binary, print go test's summary for it
  local stream=$1 verbose=$2 out start rc=0 secs all pkg dir bin
  shift 2
  all=("$@")
  pkg=${all[-3]} dir=${all[-2]} bin=${all[-1]}
  set -- "${all[@]:0:$#-3}"
  out="$TESTBIN_DIR/logs/$(basename "$(dirname "$bin")").log"
  start=$(date +%s.%N)
  if [ "$stream" = 1 ]; then
    # (a function run by xargs' bash: no pipefail there, so the binary's own exit code)
    (cd "$dir" && "$bin" -test.count=1 -test.timeout="$TESTBIN_TIMEOUT" -test.paniconexit0 "$@") 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
  else
    (cd "$dir" && "$bin" -test.count=1 -test.timeout="$TESTBIN_TIMEOUT" -test.paniconexit0 "$@") >"$out" 2>&1 || rc=$?
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3fs", b - a }')
  {
    flock 8
    if [ "$stream" != 1 ] && { [ "$rc" -ne 0 ] || [ "$verbose" = 1 ]; }; then cat "$out"; fi
    if [ "$rc" -eq 0 ]; then printf 'ok  \t%s\t%s\n' "$pkg" "$secs"; else printf 'FAIL\t%s\t%s\n' "$pkg" "$secs"; fi
  } 8>>"$TESTBIN_DIR/logs/.lock"
  return "$rc"
}

run() {
  local parallel=$1 args=() flags=() fl a p pkgs=() lines=() pkg dir bin verbose=0 stream=0
  shift
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
      shift
      fl=$(binary_flags "$@") || return
      [ -z "$fl" ] || mapfile -t flags <<<"$fl"
      break
    fi
    args+=("$1")
    shift
  done
  for a in "${flags[@]}"; do
    case "$a" in -test.v | -test.v=true) verbose=1 ;; esac
  done
  for a in "${args[@]}"; do # patterns expanded, import paths as given (in their order)
    if [[ "$a" == .* ]]; then mapfile -t p < <(go list -tags "$TESTBIN_TAGS" "$a") && pkgs+=("${p[@]}"); else pkgs+=("$a"); fi
  done
  for pkg in "${pkgs[@]}"; do
    [ -f "$TESTBIN_DIR/$(name "$pkg").current" ] || continue # no test files
    IFS=$'\t' read -r _ dir bin <"$TESTBIN_DIR/$(name "$pkg").current"
    [ -x "$bin" ] || { log "no test binary for $pkg: run hack/testbin.sh link first"; return 1; }
    lines+=("$pkg" "$dir" "$bin")
  done
  [ "${#lines[@]}" -gt 0 ] || { log "no test binaries for ${args[*]}"; return 1; }
  [ "${#lines[@]}" -gt 3 ] || stream=1
  mkdir -p "$TESTBIN_DIR/logs"
  export -f run_one
  export TESTBIN_DIR TESTBIN_TIMEOUT
  printf '%s\0' "${lines[@]}" | xargs -0 -n 3 -P "$parallel" bash -c 'run_one "$@"' run_one "$stream" "$verbose" "${flags[@]}"
}

case "${1:-}" in
  link) shift; export TESTBIN_BUILDFLAGS; link "$@" ;;
  path)
    f="$TESTBIN_DIR/$(name "$(go list -tags "$TESTBIN_TAGS" "${2:?usage: $0 path PKG}")").current"
    [ -f "$f" ] || { log "no test binary for $2: run hack/testbin.sh link first"; exit 1; }
    cut -f3 "$f"
    ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 link PKG... | run PARALLEL PKG... [-- GO-TEST-FLAGS] | path PKG" >&2; exit 2 ;;
esac
