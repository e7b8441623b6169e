#!/usr/bin/env bash
# Runs fuzz targets (make fuzz): hack/fuzz.sh FUZZTIME package:FuzzTarget...
# Each package's instrumented test binary is linked once, and again only when its inputs changed
# (hack/testbin.sh with TESTBIN_BUILDFLAGS="-fuzz .", the packages at once, one per core), and
# run for each of its targets from the package's directory, as `go test -fuzz` would run it (the
# seed corpus in testdata/fuzz, new failing inputs written there, the fuzz cache under
# GOCACHE/fuzz). `go test -fuzz` per target links the binary again for every target: 17 targets in
# 8 packages took 131 s in CI, most of it links.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT_DIR"
fuzztime=${1:?usage: hack/fuzz.sh FUZZTIME package:FuzzTarget...}
shift
mod=$(go list -m)
cache=$(go env GOCACHE)/fuzz
export TESTBIN_BUILDFLAGS="-fuzz ." TESTBIN_DIR="$CACHE_DIR/testbin/fuzz"
mapfile -t pkgs < <(for t in "$@"; do echo "./${t%%:*}"; done | sort -u)
hack/testbin.sh link "${pkgs[@]}"
for t in "$@"; do
  pkg=${t%%:*} target=${t##*:}
  bin=$(hack/testbin.sh path "./$pkg")
  echo "== $pkg $target"
  (cd "$pkg" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run '^$' -test.fuzz "^$target\$" \
    -test.fuzztime "$fuzztime" -test.fuzzcachedir "$cache/$mod/$pkg")
done
