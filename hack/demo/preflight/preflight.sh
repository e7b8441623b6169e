#!/usr/bin/env bash
# Prerequisites of `make demo` (and of the local cluster it runs on), checked before anything is
# built: root, the cgroup controllers the kubelet needs, the kernel modules and netfilter support,
# free ports, free disk. Prints one line per problem, naming what is missing and what holds a
# port, and exits 1 if there is any; prints "demo prerequisites: ok" otherwise.
#
#   hack/demo/preflight/preflight.sh        (hack/demo.sh runs it first; DEMO_SKIP_PREFLIGHT=1 skips)
#
# Ports held by this checkout's own local cluster or object stores (their command line names
# $CACHE_DIR or $LC_DIR) are fine: `make demo` reuses them. Thresholds: PREFLIGHT_MIN_CACHE_GB
# (default 2; 8 when the Kubernetes binaries are not built yet), PREFLIGHT_MIN_VAR_GB (2).
source "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

problems=()
problem() { problems+=("$*"); }

check_root() {
  [ "$(id -u)" = 0 ] || problem "root: the local cluster needs root (bridge, iptables, mounts, containerd); run as root"
}

check_cgroups() {
  local fs c missing=()
  fs="$(stat -fc %T /sys/fs/cgroup 2>/dev/null || true)"
  if [ "$fs" = cgroup2fs ]; then
    for c in cpu cpuset memory pids; do
      grep -qw "$c" /sys/fs/cgroup/cgroup.controllers 2>/dev/null || missing+=("$c")
    done
    [ ${#missing[@]} -eq 0 ] || problem "cgroups: cgroup v2 lacks the controllers ${missing[*]} (in /sys/fs/cgroup/cgroup.controllers)"
  elif [ "$fs" = tmpfs ]; then
    for c in cpu cpuacct cpuset memory pids devices; do
      [ -d "/sys/fs/cgroup/$c" ] || missing+=("$c")
    done
    [ ${#missing[@]} -eq 0 ] || problem "cgroups: cgroup v1 hierarchies not mounted: ${missing[*]} (under /sys/fs/cgroup)"
  else
    problem "cgroups: /sys/fs/cgroup is not a cgroup v1 (tmpfs of hierarchies) or v2 mount (found '${fs:-nothing}')"
  fi
}

check_kernel() {
  local m probe
  # module:what shows it is there (loaded or built in).
  for m in overlay:/proc/filesystems br_netfilter:/proc/sys/net/bridge/bridge-nf-call-iptables \
    nf_conntrack:/proc/sys/net/netfilter/nf_conntrack_max; do
    probe="${m#*:}" m="${m%%:*}"
    present() { if [ "$probe" = /proc/filesystems ]; then grep -qw overlay "$probe"; else [ -e "$probe" ]; fi; }
    present && continue
    [ "$(id -u)" = 0 ] && modprobe "$m" 2>/dev/null && present && continue
    problem "kernel: $m is neither built in nor loadable (modprobe $m; needed for ${probe})"
  done
  if command -v iptables >/dev/null; then
    if [ "$(id -u)" = 0 ] && ! iptables -w -t nat -S >/dev/null 2>&1; then
      problem "kernel: iptables cannot read the nat table (netfilter/nf_tables support missing)"
    fi
  elif ! command -v apt-get >/dev/null; then
    problem "packages: iptables is missing and there is no apt-get to install it"
  fi
}

# ours PID: the process belongs to this checkout's local cluster or object stores.
ours() {
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true)"
  [[ -n "$cmd" && ( "$cmd" == *"$CACHE_DIR/"* || "$cmd" == *"$LC_DIR/"* ) ]]
}

# check_port PROTO ADDRESS PORT WHAT: nothing else listens where WHAT will.
check_port() {
  local proto="$1" addr="$2" port="$3" what="$4" line local_addr pid name flag=-ltnpH
  [ "$proto" = udp ] && flag=-lunpH
  while read -r line; do
    [ -n "$line" ] || continue
    local_addr="$(awk '{print $4}' <<<"$line")"
    case "${local_addr%:*}" in
      "$addr" | 0.0.0.0 | "*" | "[::]" | "[::ffff:$addr]") ;;
      *) continue ;;
    esac
    pid="$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' <<<"$line" | head -1)"
    name="$(sed -n 's/.*(("\([^"]*\)".*/\1/p' <<<"$line")"
    if [ -n "$pid" ] && ours "$pid"; then continue; fi
    problem "port: $addr:$port/$proto ($what) is taken by ${name:-another process}${pid:+ (pid $pid)} listening on $local_addr"
  done < <(ss "$flag" "sport = :$port" 2>/dev/null || true)
}

check_ports() {
  command -v ss >/dev/null || { problem "tools: ss (iproute2) is missing"; return; }
  check_port tcp "$LC_BRIDGE_IP" "$LC_APISERVER_PORT" kube-apiserver
  check_port tcp 127.0.0.1 "$LC_ETCD_CLIENT_PORT" "etcd of the apiserver"
  check_port tcp 127.0.0.1 "$LC_ETCD_PEER_PORT" "etcd of the apiserver (peer)"
  check_port tcp 127.0.0.1 10257 kube-controller-manager
  check_port tcp 127.0.0.1 10259 kube-scheduler
  check_port tcp "$LC_BRIDGE_IP" 10250 kubelet
  check_port tcp 127.0.0.1 10248 "kubelet healthz"
  check_port tcp 127.0.0.1 10249 "kube-proxy metrics"
  check_port tcp 127.0.0.1 10256 "kube-proxy healthz"
  check_port udp "$LC_BRIDGE_IP" 53 CoreDNS
  check_port tcp "$LC_BRIDGE_IP" 53 CoreDNS
  check_port tcp "$LC_BRIDGE_IP" 9100 "MinIO for pods"
  check_port tcp 127.0.0.1 9100 "MinIO for pods (loopback)"
  check_port tcp "$LC_BRIDGE_IP" 4443 "fake-gcs-server for pods"
  check_port tcp "$LC_BRIDGE_IP" 10000 "Azurite for pods"
}

# free_gb PATH: free GiB on the filesystem that holds PATH (or its nearest existing parent).
free_gb() {
  local p="$1"
  while [ ! -e "$p" ]; do p="$(dirname "$p")"; done
  df -Pk "$p" | awk 'NR==2 {print int($4 / 1048576)}'
}

check_disk() {
  local need="${PREFLIGHT_MIN_CACHE_GB:-2}" have gocache
  [ -x "$K8S_BIN_DIR/kubelet" ] || need="${PREFLIGHT_MIN_CACHE_GB:-8}"
  have="$(free_gb "$CACHE_DIR")"
  [ "$have" -ge "$need" ] || problem "disk: $have GiB free for $CACHE_DIR, need $need GiB (binaries, images, object-store data)"
  gocache="$(go env GOCACHE 2>/dev/null || true)"
  if [ -n "$gocache" ] && [ ! -x "$K8S_BIN_DIR/kubelet" ]; then
    have="$(free_gb "$gocache")"
    [ "$have" -ge 6 ] || problem "disk: $have GiB free for the Go build cache $gocache, need 6 GiB to build Kubernetes once"
  fi
  need="${PREFLIGHT_MIN_VAR_GB:-2}"
  have="$(free_gb "$LC_VAR_DIR")"
  [ "$have" -ge "$need" ] || problem "disk: $have GiB free for $LC_VAR_DIR, need $need GiB (container images, pod volumes)"
}

check_root
check_cgroups
check_kernel
check_ports
check_disk

if [ ${#problems[@]} -gt 0 ]; then
  echo "demo prerequisites: ${#problems[@]} missing, nothing was built or started:" >&2
  printf '  - %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "demo prerequisites: ok" >&2
