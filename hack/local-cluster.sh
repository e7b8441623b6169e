#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, built and started by the project itself.
#
#   hack/local-cluster.sh up       build (cached) and start; returns when the node is Ready and
#                                  CoreDNS answers. Running it again is harmless.
#   hack/local-cluster.sh down     stop every process by PID, remove the bridge, the iptables
#                                  rules and chains, network namespaces, cgroups, mounts and
#                                  paths it created, and nothing else (hack/local-cluster/
#                                  teardown.sh; hack/local-cluster/selftest.sh tests that).
#   hack/local-cluster.sh status   what runs, and the node.
#   hack/local-cluster.sh kill NAME...
#                                  SIGKILL the named components (e.g. kube-apiserver, kubelet,
#                                  containerd, kubelet@local-node-2) as a crash would; `up` starts
#                                  them again. The chaos suite's control-plane and node faults
#                                  (test/chaos).
#   LC_NODES=3 hack/local-cluster.sh up
#                                  three nodes: local-node as above, plus local-node-2 and
#                                  local-node-3, each with its own containerd, kubelet and
#                                  kube-proxy in its own network namespace on the bridge, pod
#                                  CIDR 10.244.<i>.0/24, zone label zone-<a,b,c...>.
#   hack/local-cluster.sh node-down NODE
#                                  fail node NODE (2..N): SIGKILL its kubelet, kube-proxy,
#                                  containerd, shims and containers, set its veth down.
#   hack/local-cluster.sh node-up NODE
#                                  bring it back (so does `up`); returns when it is Ready.
#
# Components (all host processes, PIDs under $LC_DIR/pids): etcd for the apiserver, kube-apiserver,
# kube-controller-manager (hostPath provisioner + default StorageClass), kube-scheduler,
# containerd + runc + the CNI bridge, kubelet, kube-proxy (iptables), CoreDNS. See
# docs/local-cluster.md and the templates in hack/local-cluster/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"
# shellcheck source=hack/local-cluster/teardown.sh
source "$ROOT_DIR/hack/local-cluster/teardown.sh"

TPL_DIR="$ROOT_DIR/hack/local-cluster"
PKI="$LC_DIR/pki"
PID_DIR="$LC_DIR/pids"
LOG_DIR="$LC_DIR/logs"
ETCD_BIN="$(etcd_bin_dir "$ETCD_VERSION")"
APISERVER_URL="https://$LC_BRIDGE_IP:$LC_APISERVER_PORT"
# The registry address containerd pulls from over plain HTTP (hack/tools/registry, started by
# test/e2e/release or by hand: `make push IMG=$LC_REGISTRY/etcd-operator:<tag>`).
LC_REGISTRY="${LC_REGISTRY:-$LC_BRIDGE_IP:5001}"
FWD_CHAIN="EO-LOCAL-FORWARD"
# Start order; stop runs it backwards.
COMPONENTS=(etcd kube-apiserver containerd kube-controller-manager pvperm kube-scheduler kubelet kube-proxy coredns)
# What runs per node 2..N, as "<component>@<node>" (PID files, `kill`, `status`).
NODE_COMPONENTS=(containerd kubelet kube-proxy)

# What node 1 (the host's network namespace) renders into its templates; node_env sets them for
# nodes 2..N. With LC_NODES=1 they render exactly the single-node files.
LC_NODE_IP="$LC_BRIDGE_IP"
LC_NODE_POD_CIDR="$LC_POD_CIDR"
LC_POD_GATEWAY="$LC_BRIDGE_IP"
LC_CNI_BRIDGE="$LC_BRIDGE"
LC_CNI_RANGE_END=""
LC_CNI_EXTRA_ROUTES=""
LC_CLUSTER_CIDR="$LC_POD_CIDR"
if [ "$LC_NODES" != 1 ]; then
  if ! [[ "$LC_NODES" =~ ^[0-9]+$ ]] || ((LC_NODES < 1 || LC_NODES > 255 - LC_NODE_IP_BASE)); then
    log "ERROR: LC_NODES must be a number from 1 to $((255 - LC_NODE_IP_BASE))"
    exit 2
  fi
  # Every node's pod CIDR is a /24 of this /16 (node 1 keeps $LC_POD_CIDR).
  LC_CLUSTER_CIDR="$(cut -d. -f1-2 <<<"$LC_POD_CIDR").0.0/16"
  # Node 1's pods stay below the node addresses, and reach the other nodes' pods via the host.
  LC_CNI_RANGE_END=", \"rangeEnd\": \"${LC_BRIDGE_IP%.*}.$((LC_NODE_IP_BASE - 1))\""
  LC_CNI_EXTRA_ROUTES=", {\"dst\": \"$LC_CLUSTER_CIDR\", \"gw\": \"$LC_BRIDGE_IP\"}"
fi

kubectl_admin() { "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" "$@"; }

# ---------------------------------------------------------------------------------------------
# Processes: started detached, tracked by PID file, stopped by PID. A PID file only counts if
# the process it names still runs the binary we started (stale files after a reboot or a killed
# session are ignored and removed).

pid_of() {
  local f="$PID_DIR/$1.pid" pid exe p
  if [ -f "$f" ]; then
    pid="$(cat "$f")"
    exe="$(cat "$PID_DIR/$1.exe" 2>/dev/null || true)"
    if [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
      echo "$pid"
      return 0
    fi
    rm -f "$f" "$PID_DIR/$1.exe"
  fi
  # No valid PID file (e.g. $LC_DIR was removed under a running cluster): our process is the
  # one running exactly this component's binary with our state directory in its arguments.
  # Node 2..N components ("NAME@NODE") have $LC_DIR/nodes/NODE/ in theirs, and node 1's never.
  local pat="$LC_DIR/" not="$LC_DIR/nodes/"
  case "$1" in *@*) pat="$LC_DIR/nodes/${1#*@}/" not="" ;; esac
  exe="$(readlink -f "$(bin_of "$1")" 2>/dev/null || true)"
  for p in $(pgrep -f -- "$pat" || true); do
    if [ -n "$not" ] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -F -- "$not" >/dev/null; then continue; fi
    if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$exe" ]; then
      mkdir -p "$PID_DIR" && echo "$p" >"$f" && echo "$exe" >"$PID_DIR/$1.exe"
      echo "$p"
      return 0
    fi
  done
  return 1
}

bin_of() {
  case "${1%%@*}" in
    etcd) echo "$ETCD_BIN/etcd" ;;
    containerd) command -v containerd || echo /usr/bin/containerd ;;
    coredns) echo "$COREDNS_BIN_DIR/coredns" ;;
    pvperm) echo "$PVPERM_BIN" ;;
    *) echo "$K8S_BIN_DIR/$1" ;;
  esac
}

running() { pid_of "$1" >/dev/null; }

# start NAME BINARY ARGS...: start BINARY in its own session, log to $LOG_DIR/NAME.log.
start() {
  local name="$1" bin="$2"
  shift 2
  STARTED+=("$name")
  if running "$name"; then return 0; fi
  mkdir -p "$PID_DIR" "$LOG_DIR"
  log "starting $name"
  # 9>&-: the daemon must not inherit (and so hold) the up/down lock.
  if [ -n "${START_NETNS:-}" ]; then
    # A node 2..N component: in the node's network namespace only (nsenter execs the binary, so
    # $! is its PID; mounts stay in the host's namespace, where containerd and the kubelet share them).
    setsid nsenter "--net=/run/netns/$START_NETNS" "$bin" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
  else
    setsid "$bin" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
  fi
  echo $! >"$PID_DIR/$name.pid"
  readlink -f "$bin" >"$PID_DIR/$name.exe"
  sleep 0.2
  running "$name" || { tail -20 "$LOG_DIR/$name.log" >&2; die "$name exited at once (log: $LOG_DIR/$name.log)"; }
}

stop() {
  local name="$1" pid
  pid="$(pid_of "$name")" || return 0
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$PID_DIR/$name.pid" "$PID_DIR/$name.exe"
}

# check_alive fails fast, with the log's tail, when a component we started has exited.
check_alive() {
  local c
  for c in "${STARTED[@]}"; do
    running "$c" && continue
    tail -n 20 "$LOG_DIR/$c.log" >&2
    die "$c exited (log: $LOG_DIR/$c.log)"
  done
}
STARTED=()

die() {
  log "ERROR: $*"
  exit 1
}

# wait_for DESCRIPTION TIMEOUT_SECONDS COMMAND...: poll COMMAND until it succeeds.
wait_for() {
  local what="$1" timeout="$2" start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < timeout)) || die "timed out after ${timeout}s waiting for $what (logs: $LOG_DIR)"
    check_alive
    sleep 0.5
  done
}

render() { # render TEMPLATE OUT: replace @VAR@ with the variable's value
  local args=() v
  for v in LC_DIR LC_VAR_DIR LC_RUN_DIR LC_CONTAINERD_SOCK LC_PAUSE_IMAGE LC_BRIDGE LC_BRIDGE_IP \
    LC_POD_CIDR LC_SERVICE_CIDR LC_NODE_NAME LC_CLUSTER_DOMAIN LC_REGISTRY LC_NODE_IP LC_NODE_POD_CIDR \
    LC_POD_GATEWAY LC_CNI_BRIDGE LC_CNI_RANGE_END LC_CNI_EXTRA_ROUTES LC_CLUSTER_CIDR; do
    args+=(-e "s|@$v@|${!v}|g")
  done
  sed "${args[@]}" "$TPL_DIR/$1" >"$2.tmp" && mv "$2.tmp" "$2"
}

# ---------------------------------------------------------------------------------------------
# Build (cached by version).

build() {
  "$ROOT_DIR/hack/build-k8s.sh"
  "$ROOT_DIR/hack/build-etcd.sh" "$ETCD_VERSION"
  (cd "$ROOT_DIR" && CGO_ENABLED=0 go build -trimpath -o "$PVPERM_BIN" ./hack/tools/pvperm)
  if [ ! -x "$COREDNS_BIN_DIR/coredns" ]; then
    log "building CoreDNS $COREDNS_VERSION (cold: 2-3 min)"
    mkdir -p "$COREDNS_BIN_DIR"
    GOBIN="$COREDNS_BIN_DIR" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
      "github.com/coredns/coredns@$COREDNS_VERSION"
  fi
}

# ---------------------------------------------------------------------------------------------
# PKI: one self-made CA; serving certs for the apiserver and the kubelet; client certs per user.

cert() { # cert NAME CN O EXT: key + cert signed by the CA; EXT is the extension file body
  local name="$1" cn="$2" org="$3" ext="$4" subj="/CN=$2"
  [ -f "$PKI/$name.crt" ] && return 0
  [ -n "$org" ] && subj="/O=$org/CN=$cn"
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

kubeconfig() { # kubeconfig FILE CERT_NAME USER
  local file="$1" name="$2" user="$3"
  [ -f "$file" ] && return 0
  "$KUBECTL" --kubeconfig "$file.tmp" config set-cluster local --server "$APISERVER_URL" \
    --certificate-authority "$PKI/ca.crt" --embed-certs >/dev/null
  "$KUBECTL" --kubeconfig "$file.tmp" config set-credentials "$user" --client-certificate "$PKI/$name.crt" \
    --client-key "$PKI/$name.key" --embed-certs >/dev/null
  "$KUBECTL" --kubeconfig "$file.tmp" config set-context local --cluster local --user "$user" >/dev/null
  "$KUBECTL" --kubeconfig "$file.tmp" config use-context local >/dev/null
  mv "$file.tmp" "$file"
}

pki() {
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  if [ ! -f "$PKI/ca.crt" ]; then
    log "creating the cluster CA and certificates"
    openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=etcd-operator-local-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$PKI/ca.crt" 2>/dev/null
  fi
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  local server="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
  cert apiserver kube-apiserver "" "$server
subjectAltName=IP:127.0.0.1,IP:$LC_BRIDGE_IP,IP:$LC_APISERVER_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$LC_CLUSTER_DOMAIN"
  cert kubelet "$LC_NODE_NAME" "" "$server
subjectAltName=IP:$LC_BRIDGE_IP,DNS:$LC_NODE_NAME"
  cert admin admin system:masters "$client"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "$client"
  cert kube-controller-manager system:kube-controller-manager "" "$client"
  cert kube-scheduler system:kube-scheduler "" "$client"
  cert kubelet-client "system:node:$LC_NODE_NAME" system:nodes "$client"
  cert kube-proxy system:kube-proxy "" "$client"
  cert coredns coredns "" "$client"
  if [ ! -f "$PKI/sa.key" ]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  kubeconfig "$LC_KUBECONFIG" admin admin
  kubeconfig "$LC_DIR/kube-controller-manager.kubeconfig" kube-controller-manager system:kube-controller-manager
  kubeconfig "$LC_DIR/kube-scheduler.kubeconfig" kube-scheduler system:kube-scheduler
  kubeconfig "$LC_DIR/kubelet.kubeconfig" kubelet-client "system:node:$LC_NODE_NAME"
  kubeconfig "$LC_DIR/kube-proxy.kubeconfig" kube-proxy system:kube-proxy
  kubeconfig "$LC_DIR/coredns.kubeconfig" coredns coredns
}

# ---------------------------------------------------------------------------------------------
# Host network: the bridge, sysctls, and a FORWARD guard so nothing crosses between the cluster
# and the outside interface.

host_setup() {
  local m
  for m in overlay br_netfilter nf_conntrack; do modprobe "$m" 2>/dev/null || true; done
  [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || die "br_netfilter is not available"
  mkdir -p "$LC_DIR"
  # Remember the machine's forwarding setting once, so `down` can put it back.
  [ -f "$LC_DIR/saved-ip_forward" ] || cat /proc/sys/net/ipv4/ip_forward >"$LC_DIR/saved-ip_forward"
  # Pod -> service -> pod on the same bridge is routed (needs forwarding) and its replies must
  # pass conntrack (needs bridged traffic to go through iptables).
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1

  if ! ip link show "$LC_BRIDGE" >/dev/null 2>&1; then
    log "creating bridge $LC_BRIDGE ($LC_BRIDGE_IP)"
    ip link add "$LC_BRIDGE" type bridge
  fi
  sysctl -qw "net.ipv6.conf.$LC_BRIDGE.disable_ipv6=1" 2>/dev/null || true
  ip addr show dev "$LC_BRIDGE" | grep "inet $LC_BRIDGE_IP/" >/dev/null ||
    ip addr add "$LC_BRIDGE_IP/${LC_POD_CIDR#*/}" dev "$LC_BRIDGE"
  ip link set "$LC_BRIDGE" up
  # A bridge takes the lowest MAC of its ports unless it has its own: with node veths joining and
  # leaving, pods would see the gateway's MAC change. Pin the current one.
  if [ "$LC_NODES" != 1 ]; then
    ip link set "$LC_BRIDGE" address "$(cat "/sys/class/net/$LC_BRIDGE/address")"
  fi
  # Service addresses are routed into the bridge, not out the default route. kube-proxy rewrites
  # a ClusterIP to a pod IP once it has programmed the Service; before that (a Service made a
  # second ago, e.g. by an in-place restore) a connection from the host would leave the machine
  # and talk to whatever answers there (seen in CI: an HTTP 404 read as an etcd reply). Through
  # the bridge it finds no host and fails, and the client retries until kube-proxy has caught up.
  ip route replace "$LC_SERVICE_CIDR" dev "$LC_BRIDGE"
  forward_guard
}

# forward_guard (re)puts the jump to our guard chain first in FORWARD: kube-proxy prepends its
# own jump once, so running this again at the end of `up` keeps ours in front of it.
forward_guard() {
  iptables -w -N "$FWD_CHAIN" 2>/dev/null || true
  iptables -w -F "$FWD_CHAIN"
  # Pod -> Service -> pod is routed back into the bridge: accept it even where FORWARD's policy
  # is DROP (e.g. a machine that also runs Docker).
  iptables -w -A "$FWD_CHAIN" -i "$LC_BRIDGE" -o "$LC_BRIDGE" -j ACCEPT
  iptables -w -A "$FWD_CHAIN" -i "$LC_BRIDGE" ! -o "$LC_BRIDGE" -j DROP
  iptables -w -A "$FWD_CHAIN" ! -i "$LC_BRIDGE" -o "$LC_BRIDGE" -j DROP
  while iptables -w -D FORWARD -j "$FWD_CHAIN" 2>/dev/null; do :; done
  iptables -w -I FORWARD 1 -j "$FWD_CHAIN"
}

# ---------------------------------------------------------------------------------------------
# Components.

start_etcd() {
  start etcd "$ETCD_BIN/etcd" --name local --data-dir "$LC_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$LC_ETCD_CLIENT_PORT" \
    --advertise-client-urls "http://127.0.0.1:$LC_ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$LC_ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$LC_ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$LC_ETCD_PEER_PORT" \
    --listen-metrics-urls "" --unsafe-no-fsync --quota-backend-bytes 4294967296 --log-level warn
  wait_for "etcd" 60 "$ETCD_BIN/etcdctl" --endpoints "127.0.0.1:$LC_ETCD_CLIENT_PORT" endpoint health
}

start_apiserver() {
  start kube-apiserver "$K8S_BIN_DIR/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$LC_ETCD_CLIENT_PORT" \
    --bind-address "$LC_BRIDGE_IP" --advertise-address "$LC_BRIDGE_IP" --secure-port "$LC_APISERVER_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer "https://kubernetes.default.svc.$LC_CLUSTER_DOMAIN" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range "$LC_SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --profiling=false --event-ttl 1h
  wait_for "kube-apiserver" 120 kubectl_admin get --raw /readyz
  kubectl_admin apply -f "$TPL_DIR/addons.yaml" >/dev/null
}

# registry_hosts writes containerd's hosts.toml for $LC_REGISTRY: plain HTTP, pull and resolve.
registry_hosts() {
  local dir="$LC_DIR/certs.d/$LC_REGISTRY"
  mkdir -p "$dir"
  {
    echo "# Written by hack/local-cluster.sh: the test registry on the bridge, plain HTTP."
    echo "server = \"http://$LC_REGISTRY\""
    echo
    echo "[host.\"http://$LC_REGISTRY\"]"
    echo "  capabilities = [\"pull\", \"resolve\"]"
  } >"$dir/hosts.toml.tmp"
  mv "$dir/hosts.toml.tmp" "$dir/hosts.toml"
}

start_containerd() {
  mkdir -p "$LC_DIR/cni" "$LC_VAR_DIR" "$LC_RUN_DIR/containerd"
  registry_hosts
  local old=""
  [ ! -f "$LC_DIR/containerd.toml" ] || old="$(cat "$LC_DIR/containerd.toml")"
  render containerd.toml "$LC_DIR/containerd.toml"
  render cni.conflist "$LC_DIR/cni/10-etcd-operator-local.conflist"
  # A containerd started with an older config (e.g. before the registry settings) restarts once
  # to read the new one; running containers survive a containerd restart.
  if running containerd && [ "$old" != "$(cat "$LC_DIR/containerd.toml")" ]; then
    log "containerd config changed: restarting containerd"
    stop containerd
  fi
  start containerd "$(command -v containerd)" --config "$LC_DIR/containerd.toml"
  wait_for "containerd" 60 lc_ctr version
  # The sandbox image must be there before the kubelet starts the first pod.
  "$ROOT_DIR/hack/images.sh" pause
}

start_controller_manager() {
  start kube-controller-manager "$K8S_BIN_DIR/kube-controller-manager" \
    --kubeconfig "$LC_DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$LC_DIR/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$LC_DIR/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false \
    --root-ca-file "$PKI/ca.crt" --service-account-private-key-file "$PKI/sa.key" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --service-cluster-ip-range "$LC_SERVICE_CIDR" --cluster-cidr "$LC_CLUSTER_CIDR" --allocate-node-cidrs=false \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
    --enable-hostpath-provisioner=true
  # The hostPath provisioner makes root-owned 0750 directories and hostPath volumes ignore
  # fsGroup: pvperm opens each new one up, as local-path-provisioner does (member pods run as
  # non-root; hack/tools/pvperm).
  start pvperm "$PVPERM_BIN" "$LC_HOSTPATH_PV"
}

start_scheduler() {
  start kube-scheduler "$K8S_BIN_DIR/kube-scheduler" \
    --kubeconfig "$LC_DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$LC_DIR/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$LC_DIR/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false \
    --pod-max-in-unschedulable-pods-duration=20s
}

start_kubelet() {
  local labels=()
  mkdir -p "$LC_VAR_DIR/kubelet"
  render kubelet.yaml "$LC_DIR/kubelet.yaml"
  [ "$LC_NODES" = 1 ] || labels=(--node-labels "topology.kubernetes.io/zone=$(node_zone 1)")
  start kubelet "$K8S_BIN_DIR/kubelet" --config "$LC_DIR/kubelet.yaml" \
    --kubeconfig "$LC_DIR/kubelet.kubeconfig" --root-dir "$LC_VAR_DIR/kubelet" \
    --hostname-override "$LC_NODE_NAME" --node-ip "$LC_BRIDGE_IP" \
    --pod-infra-container-image "$LC_PAUSE_IMAGE" "${labels[@]}"
}

start_kube_proxy() {
  render kube-proxy.yaml "$LC_DIR/kube-proxy.yaml"
  start kube-proxy "$K8S_BIN_DIR/kube-proxy" --config "$LC_DIR/kube-proxy.yaml"
}

start_coredns() {
  render Corefile "$LC_DIR/Corefile"
  start coredns "$COREDNS_BIN_DIR/coredns" -conf "$LC_DIR/Corefile"
}

dns_answers() {
  [ "$(dig +short +time=1 +tries=1 "@$LC_BRIDGE_IP" "kubernetes.default.svc.$LC_CLUSTER_DOMAIN" A)" = "$LC_APISERVER_SERVICE_IP" ]
}

# ---------------------------------------------------------------------------------------------
# Nodes 2..N (LC_NODES>1). Node 1 is the host's network namespace, as with a single node. Node i
# gets the network namespace eo-local-n<i> joined to the bridge by the veth eo-local-v<i> (its
# eth0 inside), the node IP <bridge prefix>.<LC_NODE_IP_BASE+i> on the bridge subnet, the pod
# CIDR <a.b>.<i>.0/24 on its own CNI bridge eo-pods0 inside the namespace (the host routes that
# CIDR via the node IP), the v1 cgroup root /eo-local-n<i>, and its own containerd (root, state
# and socket under $LC_VAR_DIR/nodes/<node> and $LC_RUN_DIR/nodes/<node>), kubelet (own
# --root-dir) and kube-proxy, all started in that namespace with nsenter --net (the mount
# namespace stays the host's, so the kubelet's volume mounts are where containerd looks).

node_name() { if [ "$1" = 1 ]; then echo "$LC_NODE_NAME"; else echo "$LC_NODE_NAME-$1"; fi; }
node_zone() { printf 'zone-%b\n' "\\x$(printf %x $((96 + $1)))"; } # 1 -> zone-a, 2 -> zone-b, ...
node_ip() { echo "${LC_BRIDGE_IP%.*}.$((LC_NODE_IP_BASE + $1))"; }
node_pod_cidr() { echo "$(cut -d. -f1-2 <<<"$LC_POD_CIDR").$1.0/24"; }
node_netns() { echo "$LC_NODE_NETNS_PREFIX$1"; }
node_veth() { echo "$LC_NODE_VETH_PREFIX$1"; }
node_cgroup() { echo "/$LC_NODE_CGROUP_PREFIX$1"; }
node_dir() { echo "$LC_DIR/nodes/$(node_name "$1")"; }
node_var() { echo "$LC_VAR_DIR/nodes/$(node_name "$1")"; }
node_run() { echo "$LC_RUN_DIR/nodes/$(node_name "$1")"; }
node_sock() { echo "$(node_run "$1")/containerd/containerd.sock"; }
node_exec() { local ns="$1"; shift; nsenter "--net=/run/netns/$ns" "$@"; }

# node_index NODE: i of node NODE (2..), or fails.
node_index() {
  local i
  for ((i = 2; i <= 255 - LC_NODE_IP_BASE; i++)); do
    [ "$(node_name "$i")" != "$1" ] || { echo "$i"; return 0; }
  done
  return 1
}

# node_indexes: i of every node 2..N this cluster has or left behind (LC_NODES, node
# directories, network namespaces), for `down`.
node_indexes() {
  local i d n
  {
    for ((i = 2; i <= LC_NODES; i++)); do echo "$i"; done
    for d in "$LC_DIR"/nodes/*/; do [ -d "$d" ] && node_index "$(basename "$d")"; done
    for n in $(our_node_netns); do echo "${n#"$LC_NODE_NETNS_PREFIX"}"; done
  } | sort -nu
}

# node_render I TEMPLATE OUT: render TEMPLATE with node I's paths, names and addresses (locals
# shadow the globals render reads).
# shellcheck disable=SC2034 # read by render through ${!v}
node_render() {
  local i="$1" dir var run sock name ip cidr gw
  dir="$(node_dir "$i")" var="$(node_var "$i")" run="$(node_run "$i")" sock="$(node_sock "$i")"
  name="$(node_name "$i")" ip="$(node_ip "$i")" cidr="$(node_pod_cidr "$i")"
  gw="$(cut -d. -f1-3 <<<"$cidr").1"
  local LC_DIR="$dir" LC_VAR_DIR="$var" LC_RUN_DIR="$run" LC_CONTAINERD_SOCK="$sock" LC_NODE_NAME="$name"
  local LC_NODE_IP="$ip" LC_NODE_POD_CIDR="$cidr" LC_POD_GATEWAY="$gw" LC_CNI_BRIDGE=eo-pods0 LC_CNI_RANGE_END=""
  local LC_CNI_EXTRA_ROUTES=", {\"dst\": \"$LC_CLUSTER_CIDR\", \"gw\": \"$gw\"}"
  render "$2" "$3"
}

# node_files I: certificates, kubeconfigs and configs of node I in $(node_dir I).
node_files() {
  local i="$1" name dir
  name="$(node_name "$i")" dir="$(node_dir "$i")"
  mkdir -p "$dir/pki" "$dir/cni"
  cert "kubelet-$name" "$name" "" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$(node_ip "$i"),DNS:$name"
  cert "kubelet-client-$name" "system:node:$name" system:nodes "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  kubeconfig "$dir/kubelet.kubeconfig" "kubelet-client-$name" "system:node:$name"
  cp "$PKI/ca.crt" "$dir/pki/ca.crt"
  cp "$PKI/kubelet-$name.crt" "$dir/pki/kubelet.crt"
  cp "$PKI/kubelet-$name.key" "$dir/pki/kubelet.key"
  cp "$LC_DIR/kube-proxy.kubeconfig" "$dir/kube-proxy.kubeconfig"
  ln -sfn ../../certs.d "$dir/certs.d"
  node_render "$i" containerd.toml "$dir/containerd.toml"
  node_render "$i" cni.conflist "$dir/cni/10-etcd-operator-local.conflist"
  node_render "$i" kubelet.yaml "$dir/kubelet.yaml"
  echo "cgroupRoot: $(node_cgroup "$i")" >>"$dir/kubelet.yaml"
  node_render "$i" kube-proxy.yaml "$dir/kube-proxy.yaml"
}

# node_network I: node I's namespace, veth, address, routes and sysctls; its veth up.
node_network() {
  local i="$1" ns veth ip
  ns="$(node_netns "$i")" veth="$(node_veth "$i")" ip="$(node_ip "$i")"
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip -n "$ns" link delete eth0 2>/dev/null || true
    ip link add "$veth" type veth peer name eth0 netns "$ns"
  fi
  sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=1" 2>/dev/null || true
  ip link set "$veth" master "$LC_BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr show dev eth0 | grep "inet $ip/" >/dev/null || ip -n "$ns" addr add "$ip/${LC_POD_CIDR#*/}" dev eth0
  ip -n "$ns" link set eth0 up
  # No default route: like pods, nodes reach only the cluster (and the host).
  ip -n "$ns" route replace "$LC_CLUSTER_CIDR" via "$LC_BRIDGE_IP" dev eth0
  ip -n "$ns" route replace "$LC_SERVICE_CIDR" via "$LC_BRIDGE_IP" dev eth0
  node_exec "$ns" sysctl -qw net.ipv4.ip_forward=1
  node_exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 2>/dev/null ||
    log "WARNING: no per-namespace br_netfilter settings (kernel < 5.3?): same-node pod -> Service -> pod may fail on $(node_name "$i")"
  ip route replace "$(node_pod_cidr "$i")" via "$ip" dev "$LC_BRIDGE"
}

# node_cgroups I: the cgroup root of node I in every v1 hierarchy (the kubelet requires it to exist).
node_cgroups() {
  local cg d
  cg="$(node_cgroup "$1")"
  for d in "$LC_CGROUP_ROOT"/*/; do
    [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroupfs ] || continue
    mkdir -p "$d${cg#/}"
    if [ -f "$d/cpuset.cpus" ]; then
      [ -n "$(cat "$d${cg#/}/cpuset.cpus")" ] || cat "$d/cpuset.cpus" >"$d${cg#/}/cpuset.cpus"
      [ -n "$(cat "$d${cg#/}/cpuset.mems")" ] || cat "$d/cpuset.mems" >"$d${cg#/}/cpuset.mems"
    fi
  done
}

# node_start_runtime I: node I's network, cgroups, files and containerd.
node_start_runtime() {
  local i="$1" name
  name="$(node_name "$i")"
  mkdir -p "$(node_var "$i")" "$(node_run "$i")/containerd"
  node_network "$i"
  node_cgroups "$i"
  node_files "$i"
  START_NETNS="$(node_netns "$i")" start "containerd@$name" "$(command -v containerd)" --config "$(node_dir "$i")/containerd.toml"
  wait_for "containerd of $name" 60 ctr --address "$(node_sock "$i")" version
}

# node_start_agents I: node I's kubelet and kube-proxy (its containerd holds the pause image).
node_start_agents() {
  local i="$1" name dir
  name="$(node_name "$i")" dir="$(node_dir "$i")"
  START_NETNS="$(node_netns "$i")" start "kubelet@$name" "$K8S_BIN_DIR/kubelet" --config "$dir/kubelet.yaml" \
    --kubeconfig "$dir/kubelet.kubeconfig" --root-dir "$(node_var "$i")/kubelet" \
    --hostname-override "$name" --node-ip "$(node_ip "$i")" \
    --pod-infra-container-image "$LC_PAUSE_IMAGE" --node-labels "topology.kubernetes.io/zone=$(node_zone "$i")"
  START_NETNS="$(node_netns "$i")" start "kube-proxy@$name" "$K8S_BIN_DIR/kube-proxy" --config "$dir/kube-proxy.yaml"
}

# nodes_start I...: start nodes I... and import the images node 1 has into their containerd.
nodes_start() {
  local i
  for i in "$@"; do node_start_runtime "$i"; done
  "$ROOT_DIR/hack/images.sh" pause sync
  for i in "$@"; do node_start_agents "$i"; done
}

# kill_containers COMPONENT SOCK: SIGKILL and forget every container of the containerd
# COMPONENT (while it still knows them), then stop it and SIGKILL the shims of its socket.
kill_containers() {
  local name="$1" sock="$2" c pid
  if running "$name"; then
    for c in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    sleep 1
    for c in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$sock" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctr --address "$sock" -n k8s.io containers ls -q 2>/dev/null); do ctr --address "$sock" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop "$name"
  for pid in $(pgrep -f "containerd-shim.*-address $sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done
}

# node_stop I (down): node I's kube-proxy, kubelet, containers, containerd and shims.
node_stop() {
  local i="$1" name
  name="$(node_name "$i")"
  stop "kube-proxy@$name"
  stop "kubelet@$name"
  kill_containers "containerd@$name" "$(node_sock "$i")"
}

# node_fail NODE: a node failure as the chaos suite wants it: SIGKILL its kubelet, kube-proxy,
# containerd, shims and every container process (its cgroup root), then cut its network (veth
# down). State on disk stays; node-up (or up) starts it again.
node_fail() {
  local name="$1" i pid dirs
  i="$(node_index "$name")" || i=0
  ((i >= 2 && i <= LC_NODES)) ||
    die "$name is not one of nodes 2..$LC_NODES of this cluster (node 1 is the host: use kill kubelet containerd)"
  crash "kubelet@$name" "kube-proxy@$name" "containerd@$name"
  for pid in $(pgrep -f "containerd-shim.*-address $(node_sock "$i")" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  mapfile -t dirs < <(find "$LC_CGROUP_ROOT" -mindepth 2 -maxdepth 2 -type d -name "$LC_NODE_CGROUP_PREFIX$i" 2>/dev/null)
  kill_cgroups "${dirs[@]}"
  ip link set "$(node_veth "$i")" down 2>/dev/null || true
  log "node $name is down: kubelet, kube-proxy, containerd, shims and containers killed, $(node_veth "$i") down"
}

# node_recover NODE: bring a failed node back and wait until it is Ready.
node_recover() {
  local name="$1" i
  i="$(node_index "$name")" || i=0
  ((i >= 2 && i <= LC_NODES)) || die "$name is not one of nodes 2..$LC_NODES of this cluster"
  running kube-apiserver || die "the cluster is not up: run up"
  nodes_start "$i"
  wait_for "node $name to be Ready" 180 kubectl_admin wait --for=condition=Ready "node/$name" --timeout=5s
  log "node $name is up and Ready"
}

all_components() {
  local i c
  printf '%s\n' "${COMPONENTS[@]}"
  for i in $(node_indexes); do
    for c in "${NODE_COMPONENTS[@]}"; do echo "$c@$(node_name "$i")"; done
  done
}

# The bridge, its addresses, the ports and $LC_VAR_DIR/$LC_RUN_DIR are machine-wide, but $LC_DIR
# follows CACHE_DIR: the owner file names the $LC_DIR of the cluster on this machine, so that a
# checkout with another CACHE_DIR neither starts a second cluster nor tears down the running one.
OWNER_FILE=/run/etcd-operator-local.owner

check_owner() {
  local owner
  owner="$(cat "$OWNER_FILE" 2>/dev/null || true)"
  [ -z "$owner" ] || [ "$owner" = "$LC_DIR" ] && return 0
  if pgrep -f -- "$owner/" >/dev/null; then
    die "the local cluster of $owner runs on this machine; stop it first: LC_DIR=$owner $0 down"
  fi
}

up() {
  [ "$(id -u)" = 0 ] || die "the local cluster needs root (network, mounts, containerd)"
  check_owner
  lc_ensure_packages
  build
  local any=false c i
  for c in $(all_components); do running "$c" && any=true; done
  if $any && [ "$(cat "$LC_DIR/node-count" 2>/dev/null || echo 1)" != "$LC_NODES" ]; then
    die "the running cluster has $(cat "$LC_DIR/node-count" 2>/dev/null || echo 1) node(s), not LC_NODES=$LC_NODES: run down first"
  fi
  # Nothing of ours runs but something was left behind (a killed session, a reboot): start clean.
  if ! $any && { [ -d "$LC_DIR/etcd" ] || [ -d "$LC_VAR_DIR" ] || ip link show "$LC_BRIDGE" >/dev/null 2>&1 ||
    [ -n "$(our_node_netns)" ]; }; then
    log "found leftovers of a previous run and nothing running: cleaning up first"
    down
  fi
  echo "$LC_DIR" >"$OWNER_FILE"
  record_host_state
  host_setup
  pki
  start_etcd
  start_apiserver
  start_containerd
  start_controller_manager
  start_scheduler
  start_kubelet
  start_kube_proxy
  start_coredns
  if [ "$LC_NODES" != 1 ]; then
    echo "$LC_NODES" >"$LC_DIR/node-count"
    # shellcheck disable=SC2046 # one index a word
    nodes_start $(seq 2 "$LC_NODES")
  fi
  for ((i = 1; i <= LC_NODES; i++)); do
    wait_for "node $(node_name "$i") to be Ready" 180 \
      kubectl_admin wait --for=condition=Ready "node/$(node_name "$i")" --timeout=5s
  done
  wait_for "CoreDNS to answer on $LC_BRIDGE_IP:53" 60 dns_answers
  forward_guard
  if [ "$LC_NODES" = 1 ]; then
    log "local cluster is up: node $LC_NODE_NAME Ready, CoreDNS answers on $LC_BRIDGE_IP:53"
  else
    log "local cluster is up: $LC_NODES nodes Ready ($(for ((i = 1; i <= LC_NODES; i++)); do printf '%s ' "$(node_name "$i")"; done | sed 's/ $//')), CoreDNS answers on $LC_BRIDGE_IP:53"
  fi
  cat >&2 <<EOF

  export KUBECONFIG=$LC_KUBECONFIG
  $KUBECTL get nodes
  (admin in system:masters; apiserver $APISERVER_URL; logs in $LOG_DIR)

EOF
}

# ---------------------------------------------------------------------------------------------
# Teardown. Every step tolerates "already gone", so down is idempotent too.

unmount_under() { # unmount every mount point under the given directories, deepest first
  local d m
  for d in "$@"; do
    [ -e "$d" ] || continue
    { findmnt -rn -o TARGET | grep -E "^$(readlink -f "$d")(/|$)" || true; } | sort -r | while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  done
}

down() {
  [ "$(id -u)" = 0 ] || die "the local cluster needs root"
  check_owner
  local c i
  record_pv_paths
  for c in coredns kube-proxy kube-scheduler kube-controller-manager pvperm kubelet; do stop "$c"; done
  # Nodes 2..N: their kube-proxy, kubelet, containers, containerd and shims.
  for i in $(node_indexes); do node_stop "$i"; done
  # Kill the containers while containerd still knows them, then drop its records; then the
  # shims of our containerd (found by its socket in their arguments) and anything left in pods.
  kill_containers containerd "$LC_CONTAINERD_SOCK"
  kill_pod_processes
  kill_node_processes
  for c in kube-apiserver etcd; do stop "$c"; done

  unmount_under "$LC_VAR_DIR" "$LC_RUN_DIR"
  # Our pods' network namespaces (found from the bridge, so before it goes) and CNI results.
  netns_cleanup
  # Nodes 2..N: their cgroup roots, network namespaces, veths and routes.
  nodes_cleanup
  if ip link show "$LC_BRIDGE" >/dev/null 2>&1; then
    log "removing bridge $LC_BRIDGE"
    ip link delete "$LC_BRIDGE" 2>/dev/null || true
  fi
  adopt_leftover_kube_chains || true
  iptables_cleanup
  if [ -f "$LC_DIR/saved-ip_forward" ]; then
    sysctl -qw "net.ipv4.ip_forward=$(cat "$LC_DIR/saved-ip_forward")"
  fi
  remove_pv_paths
  rm -rf "$LC_VAR_DIR" "$LC_RUN_DIR" "$LC_DIR"
  rm -f "$LC_STATE"
  [ "$(cat "$OWNER_FILE" 2>/dev/null)" != "$LC_DIR" ] || rm -f "$OWNER_FILE"
  log "local cluster is down"
}

status() {
  local c pid rc=0 i
  for c in $(all_components); do
    if pid="$(pid_of "$c")"; then
      printf '%-24s running (pid %s)\n' "$c" "$pid"
    else
      printf '%-24s stopped\n' "$c"
      rc=1
    fi
  done
  printf '%-24s %s\n' bridge "$(ip -br addr show "$LC_BRIDGE" 2>/dev/null || echo absent)"
  for i in $(node_indexes); do
    printf '%-24s %s\n' "netns $(node_netns "$i")" "$(ip -br link show "$(node_veth "$i")" 2>/dev/null || echo "no veth")"
  done
  if running kube-apiserver; then
    echo
    kubectl_admin get nodes -o wide 2>&1 || rc=1
  fi
  echo
  echo "KUBECONFIG=$LC_KUBECONFIG"
  return $rc
}

# crash NAME...: SIGKILL each named component that runs (no shutdown: a crash). Its state stays;
# its stale PID file is dropped by the next pid_of, and `up` starts it again.
crash() {
  local c pid
  for c in "$@"; do
    all_components | grep -xF -- "$c" >/dev/null || die "unknown component $c (one of: $(all_components | tr '\n' ' '))"
    pid="$(pid_of "$c")" || { log "$c is not running"; continue; }
    log "killing $c (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  done
}

# One up or down at a time on this machine (two engineers, or two terminals).
lock() {
  exec 9>/run/etcd-operator-local.lock
  flock -w 900 9 || die "another hack/local-cluster.sh up/down holds /run/etcd-operator-local.lock"
}

case "${1:-}" in
  up) lock && up ;;
  down) lock && down ;;
  status) status ;;
  kill) shift && lock && crash "$@" ;;
  node-down | node-up)
    [ $# = 2 ] || { echo "usage: $0 $1 NODE" >&2 && exit 2; }
    lock
    if [ "$1" = node-down ]; then node_fail "$2"; else node_recover "$2"; fi
    ;;
  *)
    echo "usage: $0 up|down|status|kill NAME...|node-down NODE|node-up NODE" >&2
    exit 2
    ;;
esac
