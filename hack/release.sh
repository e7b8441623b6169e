#!/usr/bin/env bash
# Writes the release artifacts of VERSION into $DIST_DIR (default dist/, ignored by git):
#
#   install.yaml             CRDs, RBAC, namespace and the three Deployments with image $IMG
#                            (`kubectl apply --server-side -f install.yaml`)
#   etcd-operator-<v>.tgz    the Helm chart, version and appVersion <v>, image $IMG by default
#   sbom.spdx.json           SPDX 2.3 SBOM of the Go modules in every binary of the image
#   images.txt               $IMG and its image index digest (the same bytes `make push` pushes)
#   SHA256SUMS               sha256sum of the files above (`sha256sum -c SHA256SUMS`)
#
#   VERSION=0.2.0 IMG=registry.example.com/etcd-operator:v0.2.0 hack/release.sh
#
# VERSION is a SemVer without the leading v (the Helm chart's version); IMG defaults to
# etcd-operator:v$VERSION. It builds the operator binaries and image index for $PLATFORMS
# (hack/images.sh, NO_IMPORT=1) but pushes nothing: `make push release` does both.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${VERSION:-}"
VERSION="${VERSION#v}"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  { log "ERROR: set VERSION to a SemVer such as 0.2.0 (got '${VERSION}')"; exit 2; }
IMG="${IMG:-etcd-operator:v$VERSION}"
DIST_DIR="${DIST_DIR:-$ROOT_DIR/dist}"
PLATFORMS="${PLATFORMS:-linux/amd64 linux/arm64}"
export VERSION="v$VERSION" IMG PLATFORMS NO_IMPORT=1
# Its own archive directory: the local cluster's image archives stay as they are
# (RELEASE_IMAGES_DIR: another one, e.g. the release tests' scratch directory).
export IMAGES_DIR="${RELEASE_IMAGES_DIR:-$CACHE_DIR/release/images}"
CHART_VERSION="${VERSION#v}"

start=$SECONDS
rm -rf "$DIST_DIR"
mkdir -p "$DIST_DIR"

# The image (archive only) and the binaries in it.
"$ROOT_DIR/hack/images.sh" operator
archive="$(cat "$IMAGES_DIR/operator.path")"
digest="$(sed -n 's/.* digest=\(sha256:[0-9a-f]*\).*/\1/p' "$archive.id")"
printf '%s\n%s@%s\n' "$IMG" "${IMG%:*}" "$digest" >"$DIST_DIR/images.txt"

# install.yaml: what `make deploy IMG=...` applies.
"$ROOT_DIR/hack/deploy.sh" render >"$DIST_DIR/install.yaml"

# The Helm chart, packaged from a copy whose default image is $IMG.
helm="$("$ROOT_DIR/hack/helm.sh" install)"
chart="$(mktemp -d)"
trap 'rm -rf "$chart"' EXIT
cp -r "$ROOT_DIR/charts/etcd-operator" "$chart/"
sed -i -e "s|^  repository: etcd-operator$|  repository: ${IMG%:*}|" -e "s|^  tag: \"\"$|  tag: \"${IMG##*:}\"|" \
  "$chart/etcd-operator/values.yaml"
grep -q "^  repository: ${IMG%:*}$" "$chart/etcd-operator/values.yaml" ||
  { log "ERROR: could not set image.repository in the chart's values.yaml"; exit 1; }
"$helm" package "$chart/etcd-operator" --version "$CHART_VERSION" --app-version "$VERSION" -d "$DIST_DIR" >/dev/null

# The SBOM of every binary of every platform in the image.
created="$(TZ=UTC git -C "$ROOT_DIR" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || true)"
bins=()
for p in $PLATFORMS; do bins+=("$CACHE_DIR/build/operator-bin/${p%/*}_${p#*/}"/*); done
(cd "$ROOT_DIR" && go run ./hack/tools/sbom -name etcd-operator -version "$VERSION" ${created:+-created "$created"} \
  -out "$DIST_DIR/sbom.spdx.json" "${bins[@]}")

(cd "$DIST_DIR" && sha256sum -- * | grep -v ' SHA256SUMS$' >SHA256SUMS)
log "release $VERSION in $DIST_DIR ($((SECONDS - start))s):"
(cd "$DIST_DIR" && ls -l) >&2
