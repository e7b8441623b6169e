#!/usr/bin/env bash
# Static checks (make lint, make vulncheck). Tools are pinned here and cached under
# $CACHE_DIR/bin keyed by version; a fresh machine builds them once from the Go module proxy
# (golangci-lint: ~9 min cold on a busy 2-core machine, seconds after) or installs them from
# Debian (shellcheck).
#
#   hack/lint.sh            gofmt, go vet and golangci-lint (config .golangci.yml) with the e2e
#                           build tag (which adds files, hides none), shellcheck on hack/ and .ci/
#   hack/lint.sh vulncheck  govulncheck ./... against the Go vulnerability database (GOVULNDB,
#                           default https://vuln.go.dev); fails saying so when it is unreachable
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
GOVULNCHECK_VERSION="${GOVULNCHECK_VERSION:-v1.9.0}"
GOVULNDB="${GOVULNDB:-https://vuln.go.dev}"

# go_tool NAME MODULE_PATH VERSION: the cached binary's path, built once per version.
go_tool() {
  local name="$1" pkg="$2" version="$3" dir="$CACHE_DIR/bin/$1-$3"
  if [ ! -x "$dir/$name" ]; then
    log "building $name $version (once per version)"
    mkdir -p "$dir"
    GOBIN="$dir" CGO_ENABLED=0 go install "$pkg@$version" >&2
  fi
  echo "$dir/$name"
}

ensure_shellcheck() {
  command -v shellcheck >/dev/null && return 0
  [ "$(id -u)" = 0 ] || { log "ERROR: shellcheck is missing: apt-get install shellcheck (needs root)"; return 1; }
  log "installing shellcheck from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends shellcheck >/dev/null
}

shell_scripts() {
  git ls-files .ci hack | while read -r f; do
    case "$f" in *.sh | .ci/run) echo "$f" ;; esac
  done
}

lint() {
  cd "$ROOT_DIR"
  local out gl
  local files=() f
  # Tracked Go files that exist (a file deleted in the work tree is not checked).
  while IFS= read -r -d '' f; do [ -e "$f" ] && files+=("$f"); done < <(git ls-files -z '*.go')
  out="$(gofmt -l "${files[@]}")"
  [ -z "$out" ] || { log "not gofmt-ed (run make fmt):"; echo "$out" >&2; return 1; }
  # The e2e, chaos and bench tags only add files (test/e2e, test/chaos, test/bench, hack/demo; no file is !e2e), so one pass covers
  # every build at a fraction of the cost.
  timed "go vet (-tags e2e,chaos,bench,upgrade)" go vet -tags e2e,chaos,bench,upgrade ./...
  gl="$(go_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION")"
  timed "golangci-lint (-tags e2e,chaos,bench,upgrade)" "$gl" run --build-tags e2e,chaos,bench,upgrade ./...
  ensure_shellcheck
  local scripts
  mapfile -t scripts < <(shell_scripts)
  timed "shellcheck (${#scripts[@]} scripts)" shellcheck -x -P SCRIPTDIR "${scripts[@]}"
}

vulncheck() {
  cd "$ROOT_DIR"
  # The database is a static file tree; file:// databases (built elsewhere) are read as is.
  if [[ "$GOVULNDB" == http* ]] && ! curl -fsS --max-time 10 -o /dev/null "$GOVULNDB/index/db.json" 2>/dev/null; then
    log "ERROR: the Go vulnerability database $GOVULNDB is unreachable from this machine."
    log "  It is not served through the Go module proxy (golang.org/x/vulndb is refused there), so"
    log "  make vulncheck runs only where $GOVULNDB is reachable, or with GOVULNDB=file:///path"
    log "  pointing at a copy of the database (index/, ID/). It is not part of make lint or CI."
    return 1
  fi
  local gv
  gv="$(go_tool govulncheck golang.org/x/vuln/cmd/govulncheck "$GOVULNCHECK_VERSION")"
  timed "govulncheck" "$gv" -db "$GOVULNDB" ./...
}

case "${1:-lint}" in
  lint) lint ;;
  vulncheck) vulncheck ;;
  *)
    echo "usage: $0 [lint|vulncheck]" >&2
    exit 2
    ;;
esac
