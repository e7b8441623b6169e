#!/usr/bin/env bash
# shellcheck disable=SC2034 # sourced by hack/local-cluster.sh, which uses what is set here
# What the local cluster creates on the host and how `down` removes exactly that: sourced by
# hack/local-cluster.sh after hack/lib.sh and env.sh. Nothing here touches a chain, network
# namespace, cgroup or path that another Kubernetes, container runtime or user made:
#
# - iptables: our EO-LOCAL-* chains; the chains our kube-proxy and kubelet make (fixed names
#   and kube-proxy's hashed KUBE-SVC-/SEP-/... chains) only when $LC_STATE records that they did
#   not exist before our first `up`, or when no state says anything and they route the
#   kubernetes Service to our apiserver (a local cluster whose state went with its work tree);
#   CNI chains only when their rules name our CNI network; jump rules only where they lead to
#   one of those chains.
# - network namespaces: those of our pods, found from our bridge's veths and from the CNI
#   results of our network, never by the cni- prefix alone.
# - cgroups: those of our pods (pod<UID> for the UIDs in our kubelet's pods directory); the
#   kubepods QoS directories only if we created them, and only when empty.
# - paths: $LC_DIR, $LC_VAR_DIR, $LC_RUN_DIR, our CNI result files, our PVs' host paths (the
#   whole /tmp/hostpath_pv only if we created it).
# - nodes 2..N (LC_NODES>1): what carries our own prefixes, as the EO-LOCAL- chains do: the
#   network namespaces eo-local-n<i> (with everything in them: the node's CNI bridge, its
#   kube-proxy's iptables), the veths eo-local-v<i>, the v1 cgroup roots /eo-local-n<i> and every
#   process in them, the routes through our bridge to the nodes' pod CIDRs.

# The state lives with the host objects it describes, not in the work tree: a fresh clone on a
# machine where an earlier clone's cluster was left behind (a CI machine reused) still finds it.
# $LC_DIR/state is where scripts before 2026-11 kept it; it is still read.
LC_STATE="${LC_STATE:-$LC_VAR_DIR/host-state}"
LC_STATE_OLD="$LC_DIR/state"
LC_CNI_NETWORK="etcd-operator-local"
LC_HOSTPATH_PV="${LC_HOSTPATH_PV:-/tmp/hostpath_pv}"
LC_CNI_RESULTS="${LC_CNI_RESULTS:-/var/lib/cni/results}"
LC_CGROUP_ROOT="${LC_CGROUP_ROOT:-/sys/fs/cgroup}"
# Chains kube-proxy (iptables mode) and the kubelet create under fixed names.
KUBE_FIXED_CHAINS=(KUBE-SERVICES KUBE-EXTERNAL-SERVICES KUBE-NODEPORTS KUBE-POSTROUTING
  KUBE-MARK-MASQ KUBE-MARK-DROP KUBE-FORWARD KUBE-FIREWALL KUBE-PROXY-FIREWALL
  KUBE-KUBELET-CANARY KUBE-PROXY-CANARY KUBE-IPTABLES-HINT)
# kube-proxy's per-Service and per-endpoint chains: a prefix and 16 base32 characters.
KUBE_HASHED_RE='^KUBE-(SVC|SVL|SEP|FW|EXT|XLB)-[A-Z0-9]{16}$'
CNI_SHARED_CHAINS=(CNI-HOSTPORT-DNAT CNI-HOSTPORT-SETMARK CNI-HOSTPORT-MASQ)

state_get() { cat "$LC_STATE_OLD" "$LC_STATE" 2>/dev/null | sed -n "s/^$1=//p" | tail -1; }
state_set() { mkdir -p "$(dirname "$LC_STATE")" && echo "$1=$2" >>"$LC_STATE"; }
state_exists() { [ -f "$LC_STATE" ] || [ -f "$LC_STATE_OLD" ]; }

kube_chains_exist() {
  iptables -w -t nat -S KUBE-SERVICES >/dev/null 2>&1 || iptables -w -t filter -S KUBE-KUBELET-CANARY >/dev/null 2>&1
}
# kube_chains_route_to_us: kube-proxy's rules send the kubernetes Service to our apiserver's
# address on our bridge. No other Kubernetes has its apiserver there (the address is our bridge's).
kube_chains_route_to_us() {
  iptables -w -t nat -S 2>/dev/null | grep -E -- "^-A KUBE-SEP-[A-Z0-9]{16} .*-j DNAT --to-destination $LC_BRIDGE_IP:$LC_APISERVER_PORT( |$)" |
    grep -q -- 'default/kubernetes:https'
}

# adopt_leftover_kube_chains: KUBE- chains that no state describes but that route to our
# apiserver were made by a local cluster of ours whose state was lost with its work tree: they
# are recorded as ours, so that down removes them and up does not take them for another
# Kubernetes'.
adopt_leftover_kube_chains() {
  [ -z "$(state_get iptables_kube)" ] && kube_chains_exist && kube_chains_route_to_us || return 1
  log "KUBE- chains left by an earlier local cluster (they route the kubernetes Service to $LC_BRIDGE_IP:$LC_APISERVER_PORT): recording them as ours"
  state_set iptables_kube created
}

cni_hostport_exists() { iptables -w -t nat -S CNI-HOSTPORT-DNAT >/dev/null 2>&1; }
kubepods_exists() { compgen -G "$LC_CGROUP_ROOT/*/kubepods" >/dev/null || [ -d "$LC_CGROUP_ROOT/kubepods" ]; }
hostpath_exists() { [ -e "$LC_HOSTPATH_PV" ]; }

# record KEY TEST: the first time, KEY=created if TEST fails (not there before we start what
# makes it), KEY=foreign if it succeeds. Later calls keep the first answer.
record() {
  [ -n "$(state_get "$1")" ] && return 0
  if "$2"; then state_set "$1" foreign; else state_set "$1" created; fi
}

# record_host_state runs in `up` before the first component starts. A cluster started by an
# older version of this script (running, no state file) made all of them.
record_host_state() {
  local c
  if ! state_exists; then
    for c in "${COMPONENTS[@]}"; do
      running "$c" || continue
      log "no $LC_STATE for the running cluster (started by an older script): recording its host objects as ours"
      printf '%s=created\n' iptables_kube cni_hostport kubepods hostpath_pv >>"$LC_STATE"
      return 0
    done
  fi
  # Chains of ours that an earlier down could not attribute (no state): removed before we start.
  if adopt_leftover_kube_chains; then iptables_cleanup; fi
  record iptables_kube kube_chains_exist
  if [ "$(state_get iptables_kube)" = foreign ]; then
    die "iptables already holds KUBE- chains of another Kubernetes on this machine (e.g. KUBE-SERVICES in nat): our kube-proxy would rewrite them. Stop that cluster, or remove its rules, then run up again (and delete $LC_STATE)"
  fi
  record cni_hostport cni_hostport_exists
  record kubepods kubepods_exists
  record hostpath_pv hostpath_exists
}

# owned KEY: whether we made KEY's objects. No state file but a state directory left by an
# older script: as that script assumed, yes.
owned() {
  local v
  v="$(state_get "$1")"
  [ "$v" = created ] || { [ -z "$v" ] && ! state_exists && [ -d "$LC_DIR/pids" ]; }
}

# ---------------------------------------------------------------------------------------------
# Pods: processes and cgroups.

our_pod_uids() {
  local d
  for d in "$LC_VAR_DIR/kubelet/pods" "$LC_VAR_DIR"/nodes/*/kubelet/pods; do ls "$d" 2>/dev/null || true; done
}

# our_pod_cgroups prints the cgroup directories of our pods (pod<UID>, with - or _).
our_pod_cgroups() {
  local uid
  for uid in $(our_pod_uids); do
    find "$LC_CGROUP_ROOT" -maxdepth 5 -type d \( -name "pod$uid" -o -name "pod${uid//-/_}" \) \
      -path '*kubepods*' 2>/dev/null || true
  done
}

kill_pod_processes() {
  local dirs pids
  mapfile -t dirs < <(our_pod_cgroups)
  [ ${#dirs[@]} -gt 0 ] || return 0
  for _ in 1 2 3 4 5; do
    pids="$(find "${dirs[@]}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u || true)"
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086 # one PID per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
  find "${dirs[@]}" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  if owned kubepods; then
    # The kubelet's QoS directories, only if empty (rmdir refuses otherwise).
    for d in "$LC_CGROUP_ROOT"/*/kubepods "$LC_CGROUP_ROOT"/kubepods; do
      rmdir "$d/besteffort" "$d/burstable" "$d" 2>/dev/null || true
    done
  fi
}

# kill_cgroups DIR...: SIGKILL every process in the cgroup trees DIR..., until none is left.
kill_cgroups() {
  local pids
  [ $# -gt 0 ] || return 0
  for _ in $(seq 1 20); do
    pids="$(find "$@" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u || true)"
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086 # one PID per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
}

# our_node_cgroups prints the cgroup roots of nodes 2..N in every hierarchy.
our_node_cgroups() {
  find "$LC_CGROUP_ROOT" -mindepth 2 -maxdepth 2 -type d -regex ".*/${LC_NODE_CGROUP_PREFIX}[0-9]+" 2>/dev/null || true
}

# kill_node_processes: whatever still runs in the cgroups of nodes 2..N (their containers).
kill_node_processes() {
  local dirs
  mapfile -t dirs < <(our_node_cgroups)
  kill_cgroups "${dirs[@]}"
}

# our_node_netns prints the network namespaces of nodes 2..N.
our_node_netns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${LC_NODE_NETNS_PREFIX}[0-9]+$" || true; }

# nodes_cleanup (after their processes are gone): the nodes' cgroup roots, network namespaces,
# veths and the routes through our bridge to their pod CIDRs.
nodes_cleanup() {
  local dirs n v dst
  mapfile -t dirs < <(our_node_cgroups)
  [ ${#dirs[@]} -eq 0 ] || find "${dirs[@]}" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  for n in $(our_node_netns); do ip netns delete "$n" 2>/dev/null || true; done
  for v in $(ip -o link show 2>/dev/null | sed -n "s/^[0-9]*: \(${LC_NODE_VETH_PREFIX}[0-9]*\)@.*/\1/p"); do
    ip link delete "$v" 2>/dev/null || true
  done
  if ip link show "$LC_BRIDGE" >/dev/null 2>&1; then
    { ip -o route show dev "$LC_BRIDGE" 2>/dev/null || true; } | awk '$2 == "via" {print $1}' | while read -r dst; do
      ip route delete "$dst" dev "$LC_BRIDGE" 2>/dev/null || true
    done
  fi
}

# ---------------------------------------------------------------------------------------------
# Network namespaces and CNI state.

# our_netns prints the names of our pods' network namespaces: the peers of our bridge's veths
# and the sandboxes in the CNI results of our network.
our_netns() {
  {
    ip -o link show master "$LC_BRIDGE" 2>/dev/null | sed -n 's/.* link-netns \([^ ]*\).*/\1/p'
    cat "$LC_CNI_RESULTS/$LC_CNI_NETWORK"-* 2>/dev/null | grep -o '"sandbox":"[^"]*"' | sed 's|.*/\([^/"]*\)"$|\1|'
  } | sort -u
}

netns_cleanup() {
  local n f cid
  for n in $(our_netns); do
    ip netns list 2>/dev/null | grep -q "^$n\( \|$\)" || continue
    ip netns delete "$n" 2>/dev/null || true
  done
  for f in "$LC_CNI_RESULTS/$LC_CNI_NETWORK"-*; do
    [ -e "$f" ] || continue
    cid="${f#"$LC_CNI_RESULTS/$LC_CNI_NETWORK"-}"
    cid="${cid%-*}"
    rm -f "$f" "$LC_CNI_RESULTS/cni-loopback-$cid-lo"
  done
}

# ---------------------------------------------------------------------------------------------
# iptables.

# our_chains IPT TABLE prints the chains of TABLE that are ours.
our_chains() {
  local ipt="$1" table="$2" chain rules
  rules="$("$ipt" -w -t "$table" -S 2>/dev/null || true)"
  while read -r chain; do
    case "$chain" in
      EO-LOCAL-*) echo "$chain" ;;
      KUBE-*)
        owned iptables_kube || continue
        if printf '%s\n' "${KUBE_FIXED_CHAINS[@]}" | grep -qx -- "$chain" || [[ "$chain" =~ $KUBE_HASHED_RE ]]; then
          echo "$chain"
        fi
        ;;
      CNI-HOSTPORT-*) ;; # shared by every CNI user: see below
      CNI-*)
        # Per-container chains of the bridge and portmap plugins name the network in comments.
        grep -q -- "^-A $chain .*name: \\\\\"$LC_CNI_NETWORK\\\\\"" <<<"$rules" && echo "$chain"
        ;;
    esac
  done < <(sed -n 's/^-N //p' <<<"$rules")
}

iptables_cleanup() {
  local ipt table rule chain target ours
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for table in filter nat mangle raw; do
      mapfile -t ours < <(our_chains "$ipt" "$table")
      [ ${#ours[@]} -gt 0 ] || continue
      # Rules elsewhere that jump to our chains, then our chains themselves.
      { "$ipt" -w -t "$table" -S 2>/dev/null || true; } | grep -E '^-A ' | while read -r rule; do
        chain="$(awk '{print $2}' <<<"$rule")"
        target="$(sed -n 's/.* -[jg] \([^ ]*\).*/\1/p' <<<"$rule")"
        [ -n "$target" ] || continue
        printf '%s\n' "${ours[@]}" | grep -qx -- "$chain" && continue
        printf '%s\n' "${ours[@]}" | grep -qx -- "$target" || continue
        eval "$ipt -w -t $table ${rule/-A/-D}" 2>/dev/null || true
      done || true
      for chain in "${ours[@]}"; do "$ipt" -w -t "$table" -F "$chain" 2>/dev/null || true; done
      for chain in "${ours[@]}"; do "$ipt" -w -t "$table" -X "$chain" 2>/dev/null || true; done
    done
    # portmap's shared chains: removed when we made them and nothing but our rules was in them.
    if owned cni_hostport; then
      for chain in "${CNI_SHARED_CHAINS[@]}"; do
        "$ipt" -w -t nat -S "$chain" >/dev/null 2>&1 || continue
        [ "$("$ipt" -w -t nat -S "$chain" | grep -c '^-A ' || true)" = 0 ] || continue
        { "$ipt" -w -t nat -S 2>/dev/null || true; } | grep -E "^-A [A-Z]+ .*-j $chain( |$)" | while read -r rule; do
          eval "$ipt -w -t nat ${rule/-A/-D}" 2>/dev/null || true
        done || true
        "$ipt" -w -t nat -X "$chain" 2>/dev/null || true
      done
    fi
  done
}

# ---------------------------------------------------------------------------------------------
# Host paths of PersistentVolumes (the hostPath provisioner of kube-controller-manager).

# record_pv_paths (while the apiserver runs) remembers the host paths of our PVs.
record_pv_paths() {
  running kube-apiserver || return 0
  kubectl_admin get pv -o jsonpath='{range .items[*]}{.spec.hostPath.path}{"\n"}{end}' 2>/dev/null |
    grep "^$LC_HOSTPATH_PV/." >>"$LC_DIR/pv-paths" || true
}

remove_pv_paths() {
  local p
  if owned hostpath_pv; then
    rm -rf "$LC_HOSTPATH_PV"
    return 0
  fi
  [[ -f "$LC_DIR/pv-paths" ]] || return 0
  while read -r p; do
    case "$p" in "$LC_HOSTPATH_PV"/?*) rm -rf "$p" ;; esac
  done <"$LC_DIR/pv-paths"
}
