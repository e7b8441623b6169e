#!/usr/bin/env bash
# Builds (cached) the kube-apiserver and etcd that envtest runs, links them into one directory
# keyed by both versions, and prints that directory (use it as KUBEBUILDER_ASSETS).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$ROOT_DIR/hack/build-k8s.sh" kube-apiserver kubectl >&2
"$ROOT_DIR/hack/build-etcd.sh" "$ETCD_VERSION" >&2

dir="$CACHE_DIR/envtest/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$dir"
ln -sf "$K8S_BIN_DIR/kube-apiserver" "$dir/kube-apiserver"
ln -sf "$K8S_BIN_DIR/kubectl" "$dir/kubectl"
ln -sf "$(etcd_bin_dir "$ETCD_VERSION")/etcd" "$dir/etcd"
echo "$dir"
