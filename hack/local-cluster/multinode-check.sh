#!/usr/bin/env bash
# Checks a multi-node local cluster (LC_NODES=3 hack/local-cluster.sh up) end to end and prints
# PASS or FAIL per point; exits non-zero when any point fails. Run as root.
#
#   hack/local-cluster/multinode-check.sh          check the running cluster (it stays up;
#                                                   node-down/node-up of local-node-2 included)
#   hack/local-cluster/multinode-check.sh --full   LC_NODES=3 up + hack/images.sh etcd, the
#                                                   checks, down, then that down left nothing of
#                                                   the cluster behind (network namespaces, links,
#                                                   routes, iptables chains, mounts, cgroups,
#                                                   processes) and the teardown selftest
#
# The points: 3 nodes Ready with their zone labels; a 3-member etcd StatefulSet (the locally built
# quay.io/coreos/etcd image, required pod anti-affinity on kubernetes.io/hostname, members joined
# through headless-Service DNS names) lands one pod per node; pods on different nodes reach each
# other by pod IP, headless DNS name and ClusterIP Service, and the host reaches every pod;
# node-down local-node-2 makes its Node NotReady within 90 s and its pod unreachable while the
# other two keep quorum; node-up heals it (Node Ready, the member back in a healthy 3-member
# cluster).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"
set +e

LC_CGROUP_ROOT="${LC_CGROUP_ROOT:-/sys/fs/cgroup}"
NS="${MN_CHECK_NAMESPACE:-mn-check}"
DOWN_NODE="$LC_NODE_NAME-2"
NOT_READY_LIMIT="${NOT_READY_LIMIT:-90}"
DOMAIN="svc.$LC_CLUSTER_DOMAIN"
passed=0 failed=0

k() { "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" "$@"; }
result() { # result POINT OK DETAIL
  if [ "$2" = 0 ]; then
    passed=$((passed + 1))
    printf 'PASS  %s%s\n' "$1" "${3:+ ($3)}"
  else
    failed=$((failed + 1))
    printf 'FAIL  %s%s\n' "$1" "${3:+ ($3)}"
  fi
}
# etcdctl_in POD ENDPOINT ARGS...: etcdctl in POD against ENDPOINT.
etcdctl_in() {
  local pod="$1" ep="$2"
  shift 2
  k -n "$NS" exec "$pod" -- etcdctl --endpoints "$ep" --dial-timeout 3s --command-timeout 5s "$@" 2>&1
}
healthy() { etcdctl_in "$1" "$2" endpoint health | grep -q "is healthy"; }
pod_on() { k -n "$NS" get pods -l app=mn-check -o jsonpath="{range .items[?(@.spec.nodeName=='$1')]}{.metadata.name}{end}"; }
pod_ip() { k -n "$NS" get pod "$1" -o jsonpath='{.status.podIP}'; }
unhealthy() { ! healthy "$@"; }
host_reaches() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/2379" 2>/dev/null; }
host_unreachable() { ! host_reaches "$1"; }
node_ready() { [ "$(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
# eventually SECONDS COMMAND...: poll COMMAND every 2 s until it succeeds or SECONDS pass.
eventually() {
  local t="$1" start=$SECONDS
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < t)) || return 1
    sleep 2
  done
}

workload() {
  local peers="" i
  for i in 0 1 2; do peers+="${peers:+,}etcd-$i=http://etcd-$i.etcd.$NS.$DOMAIN:2380"; done
  cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: v1
kind: Service
metadata: {name: etcd, namespace: $NS}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: mn-check}
  ports: [{name: client, port: 2379}, {name: peer, port: 2380}]
---
apiVersion: v1
kind: Service
metadata: {name: etcd-client, namespace: $NS}
spec:
  selector: {app: mn-check}
  ports: [{name: client, port: 2379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: etcd, namespace: $NS}
spec:
  replicas: 3
  serviceName: etcd
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: mn-check}}
  template:
    metadata: {labels: {app: mn-check}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: mn-check}}
              topologyKey: kubernetes.io/hostname
      terminationGracePeriodSeconds: 2
      containers:
        - name: etcd
          image: quay.io/coreos/etcd:$ETCD_VERSION
          imagePullPolicy: IfNotPresent
          env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
          command: [/usr/local/bin/etcd]
          args:
            - --name=\$(POD_NAME)
            - --data-dir=/data/etcd
            - --listen-client-urls=http://0.0.0.0:2379
            - --advertise-client-urls=http://\$(POD_NAME).etcd.$NS.$DOMAIN:2379
            - --listen-peer-urls=http://0.0.0.0:2380
            - --initial-advertise-peer-urls=http://\$(POD_NAME).etcd.$NS.$DOMAIN:2380
            - --initial-cluster=$peers
            - --initial-cluster-state=new
            - --initial-cluster-token=mn-check
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
EOF
}

checks() {
  local i name zone nodes pods p q ip n1pod n2pod start out
  echo "== nodes"
  for i in 1 2 3; do
    name="$LC_NODE_NAME"
    [ "$i" = 1 ] || name="$LC_NODE_NAME-$i"
    zone="zone-$(printf '%b' "\\x$(printf %x $((96 + i)))")"
    eventually 60 node_ready "$name"
    result "node $name Ready" $?
    out="$(k get node "$name" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone} {.metadata.labels.kubernetes\.io/hostname} {.status.addresses[?(@.type=="InternalIP")].address}' 2>&1)"
    [[ "$out" == "$zone $name "* ]]
    result "node $name labelled topology.kubernetes.io/zone=$zone, kubernetes.io/hostname=$name" $? "$out"
  done

  echo "== a 3-member etcd StatefulSet with required anti-affinity on kubernetes.io/hostname"
  k delete namespace "$NS" --ignore-not-found --wait=true >/dev/null 2>&1
  workload | k apply -f - >/dev/null
  k -n "$NS" rollout status statefulset/etcd --timeout=180s >/dev/null 2>&1
  result "3 pods Running and Ready" $?
  nodes="$(k -n "$NS" get pods -l app=mn-check -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | tr '\n' ' ')"
  [ "$(wc -w <<<"$nodes")" = 3 ]
  result "one pod per node" $? "$(k -n "$NS" get pods -l app=mn-check -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}/{.status.podIP} {end}')"
  mapfile -t pods < <(k -n "$NS" get pods -l app=mn-check -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')

  echo "== pod to pod across nodes, DNS, Services, host"
  for p in "${pods[@]}"; do
    for q in "${pods[@]}"; do
      [ "$p" != "$q" ] || continue
      ip="$(pod_ip "$q")"
      eventually 30 healthy "$p" "http://$ip:2379"
      result "$p reaches $q by pod IP $ip" $?
      eventually 30 healthy "$p" "http://$q.etcd.$NS.$DOMAIN:2379"
      result "$p reaches $q by headless-Service DNS name $q.etcd.$NS.$DOMAIN" $?
    done
    eventually 30 healthy "$p" "http://etcd-client.$NS.$DOMAIN:2379"
    result "$p (node $(k -n "$NS" get pod "$p" -o jsonpath='{.spec.nodeName}')) reaches the ClusterIP Service etcd-client" $?
    ip="$(pod_ip "$p")"
    eventually 20 host_reaches "$ip"
    result "the host reaches $p at $ip:2379" $?
  done
  out="$(etcdctl_in etcd-0 "http://etcd-0.etcd.$NS.$DOMAIN:2379" endpoint health --cluster)"
  [ "$(grep -c "is healthy" <<<"$out")" = 3 ]
  result "the members formed one healthy 3-member etcd cluster through DNS names" $?

  echo "== node-down $DOWN_NODE"
  n2pod="$(pod_on "$DOWN_NODE")"
  n1pod="$(pod_on "$LC_NODE_NAME")"
  ip="$(pod_ip "$n2pod")"
  start=$SECONDS
  "$ROOT_DIR/hack/local-cluster.sh" node-down "$DOWN_NODE" >/dev/null 2>&1
  result "node-down $DOWN_NODE exits 0" $?
  ! pgrep -f -- "$LC_DIR/nodes/$DOWN_NODE/" >/dev/null && ! pgrep -f "containerd-shim.*-address $LC_RUN_DIR/nodes/$DOWN_NODE/" >/dev/null &&
    [ -z "$(find "$LC_CGROUP_ROOT" -mindepth 3 -path "*/${LC_NODE_CGROUP_PREFIX}2/*" -name cgroup.procs -exec cat {} + 2>/dev/null)" ]
  result "its kubelet, kube-proxy, containerd, shims and container processes are gone" $?
  eventually "$NOT_READY_LIMIT" bash -c "! \"$KUBECTL\" --kubeconfig \"$LC_KUBECONFIG\" get node $DOWN_NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  result "Node $DOWN_NODE NotReady within ${NOT_READY_LIMIT}s" $? "after $((SECONDS - start))s: Ready=$(k get node "$DOWN_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
  unhealthy "$n1pod" "http://$ip:2379"
  result "$n2pod ($ip) unreachable from $n1pod" $?
  host_unreachable "$ip"
  result "$n2pod ($ip) unreachable from the host" $?
  eventually 30 healthy "$n1pod" "http://$n1pod.etcd.$NS.$DOMAIN:2379"
  result "the other two members keep quorum" $?

  echo "== node-up $DOWN_NODE"
  start=$SECONDS
  "$ROOT_DIR/hack/local-cluster.sh" node-up "$DOWN_NODE" >/dev/null 2>&1
  node_ready "$DOWN_NODE"
  result "node-up $DOWN_NODE: Node Ready" $? "after $((SECONDS - start))s"
  eventually 120 healthy "$n1pod" "http://$n2pod.etcd.$NS.$DOMAIN:2379"
  result "$n2pod back and reachable by DNS name from $n1pod" $? "after $((SECONDS - start))s, pod IP $(pod_ip "$n2pod")"
  eventually 60 host_reaches "$(pod_ip "$n2pod")"
  result "the host reaches $n2pod again" $?
  eventually 60 bash -c "[ \"\$(\"$KUBECTL\" --kubeconfig \"$LC_KUBECONFIG\" -n $NS exec etcd-0 -- etcdctl --endpoints http://etcd-0.etcd.$NS.$DOMAIN:2379 --dial-timeout 3s endpoint health --cluster 2>&1 | grep -c 'is healthy')\" = 3 ]"
  result "a healthy 3-member etcd cluster again" $?

  [ "${MN_CHECK_KEEP:-}" = 1 ] || k delete namespace "$NS" --wait=false >/dev/null 2>&1
}

# snapshot: what a cluster could leave behind on this host, one item a line.
snapshot() {
  ip netns list 2>/dev/null | awk '{print "netns " $1}'
  ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
  ip route show | sed 's/^/route /'
  for t in filter nat mangle raw; do iptables-save -t "$t" 2>/dev/null | awk -v t="$t" '/^:/ {print "chain " t " " substr($1, 2)}'; done
  for t in filter nat mangle raw; do iptables-save -t "$t" 2>/dev/null | grep '^-A' | sed "s/^/rule $t /"; done
  findmnt -rn -o TARGET | sed 's/^/mount /'
  find "$LC_CGROUP_ROOT" -maxdepth 2 -type d | sed 's/^/cgroup /'
}

# our_pids: the processes of the running cluster: components, shims, everything in pod and node cgroups.
our_pids() {
  cat "$LC_DIR"/pids/*.pid 2>/dev/null
  pgrep -f "containerd-shim.*-address $LC_RUN_DIR/"
  find "$LC_CGROUP_ROOT" -path '*kubepods*' -name cgroup.procs -exec cat {} + 2>/dev/null
  find "$LC_CGROUP_ROOT" -path "*/${LC_NODE_CGROUP_PREFIX}[0-9]*" -name cgroup.procs -exec cat {} + 2>/dev/null
}

full() {
  local before after pids leftover p alive=""
  before="$(mktemp)" after="$(mktemp)"
  snapshot | sort -u >"$before"
  echo "== LC_NODES=3 hack/local-cluster.sh up"
  LC_NODES=3 "$ROOT_DIR/hack/local-cluster.sh" up >/tmp/multinode-check-up.log 2>&1
  result "LC_NODES=3 up (log /tmp/multinode-check-up.log)" $?
  LC_NODES=3 "$ROOT_DIR/hack/images.sh" etcd >>/tmp/multinode-check-up.log 2>&1
  result "hack/images.sh etcd imports into every node" $?
  LC_NODES=3 checks
  pids="$(our_pids | sort -u | tr '\n' ' ')"
  echo "== hack/local-cluster.sh down"
  "$ROOT_DIR/hack/local-cluster.sh" down >/tmp/multinode-check-down.log 2>&1
  result "down exits 0 (log /tmp/multinode-check-down.log)" $?
  snapshot | sort -u >"$after"
  leftover="$(comm -13 "$before" "$after")"
  [ -z "$leftover" ]
  result "down left no network namespace, link, route, iptables chain or rule, mount or cgroup that was not there before up" $? "${leftover//$'\n'/; }"
  for p in $pids; do
    [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && alive+="$p($(cat "/proc/$p/comm" 2>/dev/null)) "
  done
  [ -z "$alive" ]
  result "down left none of the cluster's $(wc -w <<<"$pids") processes running" $? "$alive"
  ! pgrep -f -- "$LC_DIR/" >/dev/null && ! pgrep -f "containerd-shim.*-address $LC_RUN_DIR/" >/dev/null
  result "no process with the cluster's state directories in its arguments" $?
  echo "== hack/local-cluster/selftest.sh"
  "$ROOT_DIR/hack/local-cluster/selftest.sh" >/tmp/multinode-check-selftest.log 2>&1
  result "teardown selftest (log /tmp/multinode-check-selftest.log: $(tail -1 /tmp/multinode-check-selftest.log))" $?
  rm -f "$before" "$after"
}

[ "$(id -u)" = 0 ] || { echo "multinode-check: run as root" >&2; exit 2; }
case "${1:-}" in
  --full) full ;;
  "") checks ;;
  *)
    echo "usage: $0 [--full]" >&2
    exit 2
    ;;
esac
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
