// Package releasetest checks what hack/images.sh and hack/release.sh produce, by running them:
// the operator image (public CA roots, binaries per platform, version stamp) and the dist/
// artifacts (install.yaml, Helm chart, SBOM, SHA256SUMS). The tests build images and helm,
// so they take minutes on a cold cache; `go test -short` skips them.
package releasetest
