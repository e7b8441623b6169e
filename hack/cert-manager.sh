#!/usr/bin/env bash
# Runs cert-manager against the local cluster, for the tests of TLS.auto.issuerRef: its CRDs
# (plain YAML from the cert-manager Go module) and its certificate controllers, built from the
# same module by hack/tools/certmanager (the Issuer and ClusterIssuer controllers with the CA and
# SelfSigned issuers, the Certificate controllers, the CertificateRequest approver and signers;
# no webhook, cainjector or ACME) and run on the host with the cluster's admin kubeconfig. No
# image is pulled: the module comes from the Go module proxy like any other.
#
#   hack/cert-manager.sh up     build (cached under .cache/bin/cert-manager-<version>), apply the
#                               CRDs, start the controllers (idempotent)
#   hack/cert-manager.sh down   stop the controllers (the CRDs go with the local cluster)
#   hack/cert-manager.sh build  only build (hack/test.sh does it early, at the lowest priority)
#
# The first build compiles cert-manager and its Kubernetes libraries: about 12 CPU-minutes (6 on
# this project's 2-core machines), then it is cached. Logs: .cache/cert-manager/certmanager.log.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

TOOL_DIR="$ROOT_DIR/hack/tools/certmanager"
# The version hack/tools/certmanager/go.mod requires: the binary's cache key.
CERT_MANAGER_VERSION="$(sed -n 's/^require github.com\/cert-manager\/cert-manager \(v[^ ]*\)$/\1/p' "$TOOL_DIR/go.mod")"
BIN="$CACHE_DIR/bin/cert-manager-$CERT_MANAGER_VERSION/certmanager"
RUN_DIR="$CACHE_DIR/cert-manager"
PID_FILE="$RUN_DIR/certmanager.pid"
LOG_FILE="$RUN_DIR/certmanager.log"

# alive: process pid exists and has not exited (a zombie not yet reaped counts as exited).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

build() {
  [ -x "$BIN" ] && return 0
  log "building cert-manager $CERT_MANAGER_VERSION's controllers (cold build, about 6 minutes on 2 cores)"
  mkdir -p "$(dirname "$BIN")"
  (cd "$TOOL_DIR" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN.tmp" .)
  mv "$BIN.tmp" "$BIN"
}

# running: the recorded PID is alive and is our binary.
running() {
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F "$BIN" >/dev/null
}

up() {
  [ -n "$CERT_MANAGER_VERSION" ] || { log "no cert-manager version in $TOOL_DIR/go.mod"; return 1; }
  timed "cert-manager build" build
  local crds
  crds="$(cd "$TOOL_DIR" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)/deploy/crds"
  "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" apply --server-side --force-conflicts -f "$crds/cert-manager.io_issuers.yaml" \
    -f "$crds/cert-manager.io_clusterissuers.yaml" -f "$crds/cert-manager.io_certificates.yaml" \
    -f "$crds/cert-manager.io_certificaterequests.yaml" >/dev/null
  "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" wait --for condition=Established --timeout 60s \
    crd/issuers.cert-manager.io crd/clusterissuers.cert-manager.io crd/certificates.cert-manager.io \
    crd/certificaterequests.cert-manager.io >/dev/null
  "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" create namespace cert-manager --dry-run=client -o yaml |
    "$KUBECTL" --kubeconfig "$LC_KUBECONFIG" apply -f - >/dev/null
  if running; then
    log "cert-manager already running (pid $(cat "$PID_FILE"))"
    return 0
  fi
  mkdir -p "$RUN_DIR"
  setsid "$BIN" --kubeconfig "$LC_KUBECONFIG" >"$LOG_FILE" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$PID_FILE"
  local deadline=$((SECONDS + 60))
  until grep -q "controllers running" "$LOG_FILE"; do
    # alive, not running: for a moment after the fork the process's cmdline is still this
    # shell's, which running's check of the binary took for an exit (a CI rehearsal's e2e
    # step failed on it at once).
    if ! alive "$pid"; then
      log "cert-manager exited; last log lines:"
      tail -n 20 "$LOG_FILE" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "cert-manager not running after 60 s; log $LOG_FILE"
      return 1
    fi
    sleep 0.5
  done
  log "cert-manager $CERT_MANAGER_VERSION running (pid $(cat "$PID_FILE")), log $LOG_FILE"
}

down() {
  if running; then
    kill "$(cat "$PID_FILE")"
    log "cert-manager stopped"
  fi
  rm -f "$PID_FILE"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  build) timed "cert-manager build" build ;;
  *)
    echo "usage: $0 up|down|build" >&2
    exit 2
    ;;
esac
