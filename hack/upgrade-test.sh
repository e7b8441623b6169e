#!/usr/bin/env bash
# The upgrade e2e test (test/e2e/upgrade, build tags e2e,upgrade) on the local cluster: the
# previous release (hack/previous-release: a commit) runs a suite with restores in flight and
# finished, then the working tree's release replaces it, and the test checks that nothing was
# deleted and every restore finishes.
#
#   hack/upgrade-test.sh [go test args...]     e.g. hack/upgrade-test.sh -run TestUpgrade
#
# 1. The previous release's tree is extracted from git (`git archive`) into
#    $CACHE_DIR/upgrade/prev, kept while hack/previous-release names the same commit (stamp
#    $CACHE_DIR/upgrade/prev.commit). A clone without that commit (shallow) fails, or with
#    UPGRADE_OPTIONAL=1 skips the test and exits 0.
# 2. The local cluster comes up (hack/local-cluster.sh up, idempotent) and the previous tree's
#    own hack/images.sh builds and imports its operator image as $E2E_UPGRADE_PREV_IMG (default
#    etcd-operator:prev), with the shared cache (binaries and locks under $CACHE_DIR) but its own
#    archive directory ($CACHE_DIR/upgrade/images), so the working tree's archive and tag
#    (etcd-operator:dev) stay as they are. It writes the shared $CACHE_DIR/build/operator-bin,
#    which the working tree's hack/images.sh rebuilds next: its image's cache key is the
#    binaries' content, so the working tree's image is neither rebuilt nor re-imported.
# 3. hack/e2e.sh (the working tree's images and operators, object stores, then go test) runs
#    the package with E2E_UPGRADE_PREV_DIR set to the previous tree: the test deploys it with its
#    own hack/deploy.sh, and the working tree's at the upgrade and at the end.
#
# Only on the local cluster: with KUBECONFIG set it stops (the previous image is imported into
# the local cluster's containerd). E2E_TIMEOUT (default 20m) is go test's -timeout.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ -n "${KUBECONFIG:-}" ]; then
  log "ERROR: hack/upgrade-test.sh runs on the local cluster only (the previous image is imported into its containerd); unset KUBECONFIG"
  exit 1
fi

prev_commit="$(grep -v '^#' "$ROOT_DIR/hack/previous-release" | tr -d '[:space:]')"
if ! git -C "$ROOT_DIR" cat-file -e "$prev_commit^{commit}" 2>/dev/null; then
  msg="the previous release $prev_commit (hack/previous-release) is not in this clone (shallow? git fetch --unshallow)"
  if [ "${UPGRADE_OPTIONAL:-}" = 1 ]; then
    log "skipping the upgrade test: $msg"
    exit 0
  fi
  log "ERROR: $msg; UPGRADE_OPTIONAL=1 skips the test instead"
  exit 1
fi

prev="$CACHE_DIR/upgrade/prev"
stamp="$CACHE_DIR/upgrade/prev.commit"
if [ "$(cat "$stamp" 2>/dev/null || true)" = "$prev_commit" ] && [ -x "$prev/hack/images.sh" ]; then
  log "previous release $prev_commit already extracted in $prev"
else
  log "extracting the previous release $prev_commit into $prev"
  rm -rf "$prev" "$stamp"
  mkdir -p "$prev"
  git -C "$ROOT_DIR" archive "$prev_commit" | tar -x -C "$prev"
  echo "$prev_commit" >"$stamp"
fi

export E2E_UPGRADE_PREV_IMG="${E2E_UPGRADE_PREV_IMG:-etcd-operator:prev}"
timed "local cluster up" "$ROOT_DIR/hack/local-cluster.sh" up
# The extracted tree is no git repository of its own: its version stamps come from here.
timed "previous operator image ($E2E_UPGRADE_PREV_IMG)" env CACHE_DIR="$CACHE_DIR" \
  IMAGES_DIR="$CACHE_DIR/upgrade/images" IMG="$E2E_UPGRADE_PREV_IMG" \
  VERSION="$(git -C "$ROOT_DIR" describe --tags --always "$prev_commit")" COMMIT="$prev_commit" \
  BUILD_DATE="$(TZ=UTC git -C "$ROOT_DIR" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ "$prev_commit")" \
  "$prev/hack/images.sh" operator

export E2E_UPGRADE_PREV_DIR="$prev"
export E2E_TIMEOUT="${E2E_TIMEOUT:-20m}"
E2E_PKGS=./test/e2e/upgrade/ E2E_TAGS=e2e,upgrade exec "$ROOT_DIR/hack/e2e.sh" "$@"
