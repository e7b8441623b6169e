#!/usr/bin/env bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Settings of the local cluster shared by hack/local-cluster.sh, images.sh, deploy.sh and e2e.sh.
# Source it after hack/lib.sh. Everything can be overridden from the environment.

COREDNS_VERSION="${COREDNS_VERSION:-v1.12.4}"
COREDNS_BIN_DIR="$CACHE_DIR/bin/coredns-$COREDNS_VERSION"
# hack/tools/pvperm, which opens up the hostPath provisioner's volume directories.
PVPERM_BIN="$CACHE_DIR/bin/pvperm"

# Config, PKI, logs, PID files, the apiserver's etcd data and the admin kubeconfig.
LC_DIR="${LC_DIR:-$CACHE_DIR/local-cluster}"
# Runtime state that holds mounts (kubelet volumes, containerd snapshots): kept out of the
# work tree so that removing .cache can never walk into a mounted tmpfs or overlay.
LC_VAR_DIR="${LC_VAR_DIR:-/var/lib/etcd-operator-local}"
LC_RUN_DIR="${LC_RUN_DIR:-/run/etcd-operator-local}"
LC_KUBECONFIG="$LC_DIR/kubeconfig"

LC_NODE_NAME="${LC_NODE_NAME:-local-node}"
LC_BRIDGE="${LC_BRIDGE:-eo-local0}"
# The bridge address is the node IP, the apiserver's address and the cluster DNS address.
LC_BRIDGE_IP="${LC_BRIDGE_IP:-10.244.0.1}"
LC_POD_CIDR="${LC_POD_CIDR:-10.244.0.0/24}"
LC_SERVICE_CIDR="${LC_SERVICE_CIDR:-10.96.0.0/16}"
LC_APISERVER_SERVICE_IP="${LC_APISERVER_SERVICE_IP:-10.96.0.1}"
LC_APISERVER_PORT="${LC_APISERVER_PORT:-6443}"
# Not etcd's default ports, so tests that start their own etcd on 2379 do not collide.
LC_ETCD_CLIENT_PORT="${LC_ETCD_CLIENT_PORT:-12379}"
LC_ETCD_PEER_PORT="${LC_ETCD_PEER_PORT:-12380}"
LC_CLUSTER_DOMAIN="cluster.local"

LC_CONTAINERD_SOCK="$LC_RUN_DIR/containerd/containerd.sock"

# Nodes (docs/local-cluster.md, "Several nodes"). LC_NODES=1 (the default) is the single node
# above. LC_NODES=N>1 adds nodes 2..N, $LC_NODE_NAME-<i>, each with its own containerd, kubelet and
# kube-proxy in its own network namespace on the bridge. A running cluster's count is recorded in
# $LC_DIR/node-count, so commands without LC_NODES (hack/e2e.sh, images.sh) follow it.
LC_NODES="${LC_NODES:-$(cat "$LC_DIR/node-count" 2>/dev/null || echo 1)}"
# Host-side names of node i (2..N): network namespace, veth on the bridge, v1 cgroup root.
LC_NODE_NETNS_PREFIX="eo-local-n"
LC_NODE_VETH_PREFIX="eo-local-v"
LC_NODE_CGROUP_PREFIX="eo-local-n"
# Node i's address on the bridge: the last octet is LC_NODE_IP_BASE+i (node 1 keeps the bridge
# address). Node 1's pods then get addresses below LC_NODE_IP_BASE only (rangeEnd).
LC_NODE_IP_BASE="${LC_NODE_IP_BASE:-240}"

# lc_node_socks prints the containerd socket of every node whose containerd answers: node 1's
# first, then those of nodes 2..N (a node stopped by `local-cluster.sh node-down` is skipped).
lc_node_socks() {
  local s
  echo "$LC_CONTAINERD_SOCK"
  for s in "$LC_RUN_DIR"/nodes/*/containerd/containerd.sock; do
    [ -S "$s" ] || continue
    if timeout 5 ctr --address "$s" version >/dev/null 2>&1; then
      echo "$s"
    else
      log "containerd $s does not answer (node down?): skipped"
    fi
  done
}
# The pod sandbox image: built locally by hack/images.sh, never pulled.
LC_PAUSE_IMAGE="${LC_PAUSE_IMAGE:-localhost/etcd-operator/pause:1.0}"

# kubectl built from source by hack/build-k8s.sh; never whatever kubectl is on PATH.
KUBECTL="$K8S_BIN_DIR/kubectl"

lc_ctr() { ctr --address "$LC_CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# lc_kubeconfig prints the kubeconfig to use: $KUBECONFIG if set, else the local cluster's.
lc_kubeconfig() { echo "${KUBECONFIG:-$LC_KUBECONFIG}"; }

# lc_ensure_packages installs the Debian packages the local cluster needs when a command is
# missing; `apt-get update` runs only when an install is needed.
lc_ensure_packages() {
  local -A pkg_of=(
    [containerd]=containerd [ctr]=containerd [runc]=runc [iptables]=iptables
    [conntrack]=conntrack [openssl]=openssl [dig]=bind9-dnsutils [ip]=iproute2
    [modprobe]=kmod [findmnt]=util-linux [pgrep]=procps
  )
  local missing=() cmd
  for cmd in "${!pkg_of[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg_of[$cmd]}")
  done
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/portmap ] && [ -x /usr/lib/cni/host-local ] ||
    missing+=(containernetworking-plugins)
  [ ${#missing[@]} -eq 0 ] && return 0
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
