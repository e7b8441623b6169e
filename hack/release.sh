#!/usr/bin/env bash
# Writes the release artifacts of VERSION into $DIST_DIR (default dist/, ignored by git):
#
#   install.yaml             CRDs, RBAC, namespace and the three Deployments with image $IMG
#                            (`kubectl apply --server-side -f install.yaml`)
#   etcd-operator-<v>.tgz    the Helm chart, version and appVersion <v>, image $IMG by default
#   sbom.spdx.json           SPDX 2.3 SBOM of the Go modules in every binary of the image
#   images.txt               $IMG and its image index digest (the same bytes `make push` pushes)
#   kubectl-etcd_<os>_<arch>.tar.gz
#                            the kubectl plugin (kubectl-etcd, kubectl_complete-etcd, LICENSE) for each of
#                            $PLUGIN_PLATFORMS (default $PLATFORMS)
#   krew-etcd.yaml           the plugin's krew manifest: each archive at $KREW_URL/<archive>
#                            with its sha256 (krew install --manifest=krew-etcd.yaml)
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

# The kubectl plugin: an archive per platform, stamped like the operators, and krew's manifest.
created="$(TZ=UTC git -C "$ROOT_DIR" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || true)"
commit="$(git -C "$ROOT_DIR" rev-parse HEAD 2>/dev/null || true)"
PLUGIN_PLATFORMS="${PLUGIN_PLATFORMS:-$PLATFORMS}"
KREW_URL="${KREW_URL:-https://github.com/etcd-operator/etcd-operator/releases/download/$VERSION}"
vpkg=github.com/etcd-operator/etcd-operator/internal/version
plugin_bins=()
{
  printf '%s\n' "apiVersion: krew.googlecontainertools.github.com/v1alpha2" "kind: Plugin" "metadata:" "  name: etcd" "spec:" \
    "  version: $VERSION" "  homepage: https://github.com/etcd-operator/etcd-operator" \
    "  shortDescription: Day-two actions on the EtcdClusters of the etcd operator suite" \
    "  description: |" \
    "    Status, backups, restores into a new name or in place, restore drills, defragmentation" \
    "    and redacted support bundles for the EtcdClusters (etcd.database.coreos.com/v1beta2)" \
    "    that the etcd operator suite runs." "  platforms:"
} >"$DIST_DIR/krew-etcd.yaml"
for p in $PLUGIN_PLATFORMS; do
  os="${p%/*}" arch="${p#*/}" exe=kubectl-etcd
  [ "$os" != windows ] || exe=kubectl-etcd.exe
  dir="$CACHE_DIR/build/kubectl-etcd/${os}_$arch"
  archive="kubectl-etcd_${os}_$arch.tar.gz"
  mkdir -p "$dir"
  (cd "$ROOT_DIR" && CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath \
    -ldflags "-s -w -X $vpkg.Version=$VERSION -X $vpkg.Commit=$commit -X $vpkg.Date=$created" -o "$dir/$exe" ./cmd/kubectl-etcd)
  cp "$ROOT_DIR/LICENSE" "$dir/LICENSE"
  # kubectl (1.26+) completes a plugin's arguments through kubectl_complete-<plugin> on the PATH.
  printf '%s\n' '#!/bin/sh' '# kubectl etcd <TAB>: kubectl runs this with the words typed (docs/kubectl-etcd.md).' \
    'exec kubectl-etcd __complete "$@"' >"$dir/kubectl_complete-etcd"
  chmod 755 "$dir/kubectl_complete-etcd"
  # Reproducible: sorted, no owners, the commit's time, no gzip timestamp.
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime="${created:-1970-01-01T00:00:00Z}" -cf - "$exe" LICENSE kubectl_complete-etcd |
    gzip -n >"$DIST_DIR/$archive"
  plugin_bins+=("$dir/$exe")
  printf '%s\n' "  - selector:" "      matchLabels:" "        os: $os" "        arch: $arch" \
    "    uri: $KREW_URL/$archive" "    sha256: $(sha256sum "$DIST_DIR/$archive" | cut -d' ' -f1)" "    bin: $exe" \
    >>"$DIST_DIR/krew-etcd.yaml"
done

# The SBOM of every binary of every platform in the image, and of the plugin.
bins=("${plugin_bins[@]}")
for p in $PLATFORMS; do bins+=("$CACHE_DIR/build/operator-bin/${p%/*}_${p#*/}"/*); done
(cd "$ROOT_DIR" && go run ./hack/tools/sbom -name etcd-operator -version "$VERSION" ${created:+-created "$created"} \
  -out "$DIST_DIR/sbom.spdx.json" "${bins[@]}")

(cd "$DIST_DIR" && sha256sum -- * | grep -v ' SHA256SUMS$' >SHA256SUMS)
log "release $VERSION in $DIST_DIR ($((SECONDS - start))s):"
(cd "$DIST_DIR" && ls -l) >&2
