#!/usr/bin/env bash
# Self-test of `hack/local-cluster.sh down`: it removes what the local cluster created and
# nothing else. Runs as root in its own PID, mount and network namespaces, with tmpfs over /run,
# /tmp, /var/lib/cni and /sys/fs/cgroup, so it never sees or touches a running local cluster,
# the machine's iptables, network namespaces, cgroups or processes.
#
#   hack/local-cluster/selftest.sh [SCRIPT]     SCRIPT defaults to hack/local-cluster.sh
#
# Inside, it builds a host as `up` would leave it (our bridge, EO-LOCAL-/KUBE-/CNI- chains and
# jumps, pod network namespaces, pod cgroups with processes, PV directories, CNI results, the
# state file; and a second node as LC_NODES>1 makes it: network namespace eo-local-n2 with its
# veth eo-local-v2 on our bridge, a process in it, the route to its pod CIDR, its cgroup root
# with a pod's process, a tmpfs under its state directory) next to decoys made by "someone
# else" (the chain KUBE-DECOY-TEST, the network namespace cni-decoy-test, a CNI chain of another
# network in CNI-HOSTPORT-DNAT, a kubepods pod cgroup of another kubelet with a live process,
# another PV directory, the network namespace eo-local-decoy with a veth, a top-level cgroup
# eo-local-decoy with a live process, a route on another interface), runs SCRIPT down, and checks
# that ours are gone and the decoys are intact. Prints "N passed, M failed".
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRIPT="$(readlink -f "${1:-$HERE/../local-cluster.sh}")"

if [ "${LC_SELFTEST_INNER:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "selftest: needs root (namespaces, iptables)" >&2; exit 2; }
  # The local cluster's Debian packages (iptables, iproute2, util-linux, ...), as `up` installs
  # them: make test runs this before its first `up`, on a machine that may have none of them.
  # shellcheck source=hack/lib.sh
  source "$HERE/../lib.sh"
  # shellcheck source=hack/local-cluster/env.sh
  source "$HERE/env.sh"
  lc_ensure_packages
  for c in unshare iptables ip; do
    command -v "$c" >/dev/null || { echo "selftest: $c is missing" >&2; exit 2; }
  done
  exec unshare --pid --fork --mount-proc --mount --net --propagation private \
    env LC_SELFTEST_INNER=1 "$0" "$SCRIPT"
fi

# ---- inside the namespaces ------------------------------------------------------------------
# The scripts may live under a directory masked below (a clone in /tmp): run a copy of hack/
# from a private tmpfs (this mount namespace's own; the host's /dev/shm is not touched).
mount -t tmpfs selftest-src /dev/shm
cp -a "$(dirname "$SCRIPT")" /dev/shm/hack
SCRIPT="/dev/shm/hack/$(basename "$SCRIPT")"
for d in /run /tmp /var/lib/cni /sys/fs/cgroup; do
  mkdir -p "$d"
  mount -t tmpfs selftest "$d"
done
ip link set lo up
export CACHE_DIR=/tmp/selftest/cache LC_DIR=/tmp/selftest/cache/local-cluster \
  LC_VAR_DIR=/tmp/selftest/var LC_RUN_DIR=/tmp/selftest/run LC_BRIDGE=eo-local0
NET=etcd-operator-local
OUR_UID=11111111-2222-3333-4444-555555555555
HASH=ABCDEFGHIJKLMNOP

# Ours, as a running cluster leaves them.
mkdir -p "$LC_DIR/pids" "$LC_VAR_DIR/kubelet/pods/$OUR_UID" "$LC_RUN_DIR" /tmp/hostpath_pv/pvc-ours
printf '%s\n' iptables_kube=created cni_hostport=created kubepods=created hostpath_pv=foreign >"$LC_VAR_DIR/host-state"
echo /tmp/hostpath_pv/pvc-ours >"$LC_DIR/pv-paths"
ip link add eo-local0 type bridge && ip link set eo-local0 up
iptables -w -N EO-LOCAL-FORWARD && iptables -w -A EO-LOCAL-FORWARD -i eo-local0 -j ACCEPT
iptables -w -I FORWARD 1 -j EO-LOCAL-FORWARD
for c in KUBE-SERVICES KUBE-POSTROUTING KUBE-MARK-MASQ "KUBE-SVC-$HASH" "KUBE-SEP-$HASH"; do iptables -w -t nat -N "$c"; done
iptables -w -t nat -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp --dport 443 -j "KUBE-SVC-$HASH"
iptables -w -t nat -A "KUBE-SVC-$HASH" -j "KUBE-SEP-$HASH"
iptables -w -t nat -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
iptables -w -t nat -A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
iptables -w -t nat -A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
iptables -w -N KUBE-FIREWALL && iptables -w -A INPUT -j KUBE-FIREWALL
iptables -w -N KUBE-KUBELET-CANARY
iptables -w -t nat -N CNI-HOSTPORT-DNAT
iptables -w -t nat -N CNI-DN-0123456789abcdef0123
iptables -w -t nat -A CNI-DN-0123456789abcdef0123 -p tcp --dport 8080 -m comment \
  --comment "dnat name: \"$NET\" id: \"ourcid\"" -j DNAT --to-destination 10.244.0.5:80
iptables -w -t nat -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"$NET\" id: \"ourcid\"" \
  -m multiport --dports 8080 -j CNI-DN-0123456789abcdef0123
iptables -w -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
ip netns add cni-ours-bridge
ip link add veth-ours type veth peer name eth0 netns cni-ours-bridge
ip link set veth-ours master eo-local0 up
ip netns add cni-ours-result
mkdir -p /var/lib/cni/results
echo "{\"kind\":\"cniCacheV1\",\"containerId\":\"ourcid\",\"networkName\":\"$NET\",\"result\":{\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/var/run/netns/cni-ours-result\"}]}}" \
  >"/var/lib/cni/results/$NET-ourcid-eth0"
touch /var/lib/cni/results/cni-loopback-ourcid-lo
mkdir -p "/sys/fs/cgroup/pids/kubepods/besteffort/pod$OUR_UID"
sleep 600 &
our_pid=$!
echo "$our_pid" >"/sys/fs/cgroup/pids/kubepods/besteffort/pod$OUR_UID/cgroup.procs"

# A second node (LC_NODES>1), as `up` leaves it.
NODE2=local-node-2
NODE2_UID=66666666-7777-8888-9999-000000000000
echo 3 >"$LC_DIR/node-count"
mkdir -p "$LC_DIR/nodes/$NODE2" "$LC_VAR_DIR/nodes/$NODE2/kubelet/pods/$NODE2_UID" "$LC_RUN_DIR/nodes/$NODE2/containerd"
mount -t tmpfs selftest-node2 "$LC_VAR_DIR/nodes/$NODE2/kubelet/pods/$NODE2_UID"
ip addr add 10.244.0.1/24 dev eo-local0
ip netns add eo-local-n2
ip link add eo-local-v2 type veth peer name eth0 netns eo-local-n2
ip link set eo-local-v2 master eo-local0 up
ip -n eo-local-n2 link set eth0 up
ip -n eo-local-n2 addr add 10.244.0.242/24 dev eth0
ip route add 10.244.2.0/24 via 10.244.0.242 dev eo-local0
nsenter --net=/run/netns/eo-local-n2 sleep 600 &
node_pid=$!
mkdir -p "/sys/fs/cgroup/pids/eo-local-n2/kubepods/besteffort/pod$NODE2_UID"
sleep 600 &
node_pod_pid=$!
echo "$node_pod_pid" >"/sys/fs/cgroup/pids/eo-local-n2/kubepods/besteffort/pod$NODE2_UID/cgroup.procs"
# The process in the node's namespace runs in the node's cgroup root, as its containers do.
echo "$node_pid" >"/sys/fs/cgroup/pids/eo-local-n2/cgroup.procs"

# Someone else's.
iptables -w -N KUBE-DECOY-TEST && iptables -w -A KUBE-DECOY-TEST -j RETURN
iptables -w -A INPUT -j KUBE-DECOY-TEST
iptables -w -t nat -N KUBE-DECOY-TEST
iptables -w -t nat -N CNI-DECOY-TEST
iptables -w -t nat -A CNI-DECOY-TEST -p tcp -m comment --comment 'dnat name: "other-net" id: "x"' -j DNAT --to-destination 10.88.0.5:80
iptables -w -t nat -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment 'dnat name: "other-net" id: "x"' -j CNI-DECOY-TEST
ip netns add cni-decoy-test
mkdir -p /tmp/hostpath_pv/pvc-decoy /sys/fs/cgroup/pids/kubepods/besteffort/podDECOY
touch /var/lib/cni/results/other-net-decoycid-eth0 /var/lib/cni/results/cni-loopback-decoycid-lo
sleep 600 &
decoy_pid=$!
echo "$decoy_pid" >/sys/fs/cgroup/pids/kubepods/besteffort/podDECOY/cgroup.procs
ip netns add eo-local-decoy
ip link add veth-decoy type veth peer name eth0 netns eo-local-decoy
ip link add decoy-a type veth peer name decoy-b
ip link set decoy-a up
ip link set decoy-b up
ip addr add 10.99.0.1/24 dev decoy-a
ip route add 10.99.1.0/24 via 10.99.0.2 dev decoy-a
mkdir -p /sys/fs/cgroup/pids/eo-local-decoy
sleep 600 &
decoy_cg_pid=$!
echo "$decoy_cg_pid" >/sys/fs/cgroup/pids/eo-local-decoy/cgroup.procs

echo "selftest: running $SCRIPT down in a sandbox"
rc=0
"$SCRIPT" down || rc=$?

passed=0 failed=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
  local what="$1"
  shift
  if "$@" >/dev/null 2>&1; then
    passed=$((passed + 1))
    echo "ok    $what"
  else
    failed=$((failed + 1))
    echo "FAIL  $what"
  fi
}
chain() { iptables -w -t "$1" -S "$2"; }
no() { ! "$@"; }
netns() { ip netns list | grep -q "^$1\( \|$\)"; }
alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" | cut -c1)" != Z ]; }

check "down exits 0" test "$rc" = 0
echo "-- ours are gone"
check "bridge eo-local0 removed" no ip link show eo-local0
check "EO-LOCAL-FORWARD removed" no chain filter EO-LOCAL-FORWARD
check "nat KUBE-SERVICES removed" no chain nat KUBE-SERVICES
check "nat KUBE-SVC-$HASH removed" no chain nat "KUBE-SVC-$HASH"
check "nat KUBE-SEP-$HASH removed" no chain nat "KUBE-SEP-$HASH"
check "filter KUBE-FIREWALL removed" no chain filter KUBE-FIREWALL
check "our CNI-DN chain removed" no chain nat CNI-DN-0123456789abcdef0123
check "netns of a veth on our bridge removed" no netns cni-ours-bridge
check "netns in our CNI results removed" no netns cni-ours-result
check "our CNI results removed" no test -e "/var/lib/cni/results/$NET-ourcid-eth0" -o -e /var/lib/cni/results/cni-loopback-ourcid-lo
check "our pod's process killed" no alive "$our_pid"
check "our PV directory removed" no test -e /tmp/hostpath_pv/pvc-ours
check "state directory removed" no test -e "$LC_DIR"
check "node netns eo-local-n2 removed" no netns eo-local-n2
check "node veth eo-local-v2 removed" no ip link show eo-local-v2
check "route to node 2's pod CIDR removed" no sh -c 'ip route show | grep -q "^10.244.2.0/24"'
check "process in node 2's namespace killed" no alive "$node_pid"
check "node 2's pod process killed" no alive "$node_pod_pid"
check "node 2's tmpfs unmounted" no sh -c "findmnt -rn -o TARGET | grep -q '$LC_VAR_DIR/nodes/'"
check "node 2's state directories removed" no test -e "$LC_VAR_DIR/nodes" -o -e "$LC_RUN_DIR/nodes"
echo "-- the decoys survive"
check "filter KUBE-DECOY-TEST and its jump from INPUT kept" sh -c 'iptables -w -S KUBE-DECOY-TEST && iptables -w -S INPUT | grep -q -- "-j KUBE-DECOY-TEST"'
check "nat KUBE-DECOY-TEST kept" chain nat KUBE-DECOY-TEST
check "CNI chain of another network kept" chain nat CNI-DECOY-TEST
check "CNI-HOSTPORT-DNAT kept while another network uses it" sh -c 'iptables -w -t nat -S CNI-HOSTPORT-DNAT | grep -q CNI-DECOY-TEST'
check "netns cni-decoy-test kept" netns cni-decoy-test
check "another kubelet's pod process alive" alive "$decoy_pid"
check "another PV directory kept" test -d /tmp/hostpath_pv/pvc-decoy
check "netns eo-local-decoy and its veth kept" sh -c 'ip netns list | grep -q "^eo-local-decoy" && ip link show veth-decoy'
check "route on another interface kept" sh -c 'ip route show | grep -q "^10.99.1.0/24 via 10.99.0.2"'
check "process in cgroup eo-local-decoy alive" alive "$decoy_cg_pid"
check "another network's CNI results kept" test -e /var/lib/cni/results/other-net-decoycid-eth0 -a -e /var/lib/cni/results/cni-loopback-decoycid-lo

# Leftovers of an earlier clone's cluster (a reused CI machine): the work tree and its state are
# gone, the bridge, the var directory and kube-proxy's chains are not. The chains route the
# kubernetes Service to our apiserver, so they are ours; down removes them.
kube_proxy_chains() { # kube_proxy_chains APISERVER: what kube-proxy leaves for the kubernetes Service
  for c in KUBE-SERVICES KUBE-POSTROUTING KUBE-MARK-MASQ "KUBE-SVC-$HASH" "KUBE-SEP-$HASH"; do iptables -w -t nat -N "$c"; done
  iptables -w -t nat -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -j "KUBE-SVC-$HASH"
  iptables -w -t nat -A "KUBE-SVC-$HASH" -m comment --comment "default/kubernetes:https -> $1" -j "KUBE-SEP-$HASH"
  iptables -w -t nat -A "KUBE-SEP-$HASH" -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination "$1"
  iptables -w -t nat -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
  iptables -w -N KUBE-FIREWALL && iptables -w -A INPUT -j KUBE-FIREWALL
}
run_down() { # run_down WHAT: runs SCRIPT down and checks it exits 0
  local rc=0
  echo "selftest: $SCRIPT down $1"
  "$SCRIPT" down || rc=$?
  echo "-- $1"
  check "down exits 0" test "$rc" = 0
}
mkdir -p "$LC_VAR_DIR/kubelet/pods"
ip link add eo-local0 type bridge && ip addr add 10.244.0.1/24 dev eo-local0
kube_proxy_chains 10.244.0.1:6443
run_down "over an earlier clone's leftovers (no state anywhere)"
check "nat KUBE-SERVICES routing to our apiserver removed" no chain nat KUBE-SERVICES
check "nat KUBE-SEP-$HASH removed" no chain nat "KUBE-SEP-$HASH"
check "filter KUBE-FIREWALL and its jump removed" no chain filter KUBE-FIREWALL
check "bridge eo-local0 removed" no ip link show eo-local0
check "var directory and its state removed" no test -e "$LC_VAR_DIR"
check "filter KUBE-DECOY-TEST kept" chain filter KUBE-DECOY-TEST

# Another Kubernetes' chains, no state: its apiserver is elsewhere, so down leaves them.
mkdir -p "$LC_VAR_DIR"
kube_proxy_chains 192.0.2.10:6443
run_down "next to another Kubernetes' chains (no state anywhere)"
check "nat KUBE-SERVICES of another apiserver kept" chain nat KUBE-SERVICES
check "nat KUBE-SEP-$HASH of another apiserver kept" chain nat "KUBE-SEP-$HASH"
check "filter KUBE-FIREWALL of another Kubernetes kept" chain filter KUBE-FIREWALL

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
