#!/usr/bin/env bash
# Installs (cached) and runs the object-store servers that pkg/backend's tests and bench/backend
# use, all on loopback:
#   MinIO (S3)                127.0.0.1:9000
#   fake-gcs-server (GCS)     127.0.0.1:4443
#   Azurite (Azure Blob)      127.0.0.1:10000
# Usage: hack/objstores.sh up|down|status|env
#   up      install what is missing, start what is not running, wait until ready, write the env file
#   down    stop the servers (by PID) and wipe their state
#   status  show which servers run
#   env     print the env file (`eval "$(hack/objstores.sh env)"`)
#   kill NAME...  SIGKILL the named servers (minio, fake-gcs, azurite) as a crash would, keeping
#           their state: the next `up` starts them again on it (the chaos suite's object store
#           faults; a server started any other way starts with fresh state)
#   versions  print the pinned server versions
# Binaries live under $CACHE_DIR/objstores keyed by version; server state under
# $CACHE_DIR/objstores/data, wiped on `down` and recreated when a server is started.
#
# OBJSTORES_BIND=<address> runs a second, independent set on that address, ports as above but S3's,
# e.g. the local cluster's bridge address, which pods can reach (they cannot reach the host's
# loopback):
#   OBJSTORES_BIND=10.244.0.1 hack/objstores.sh up|down|status|env
# MinIO listens on port 9100 there (it always listens on loopback too, and must not share the
# loopback set's 9000). Its PID files, logs and data live under $CACHE_DIR/objstores/<address>/,
# and its env file is $CACHE_DIR/objstores/pods.env (override with OBJSTORES_ENV_FILE), with the same OBJSTORE_*
# variables as the loopback set, pointing at <address>. fake-gcs-server's public host and external
# URL are <address> too, so resumable uploads started from a pod continue at an address the pod
# reaches. The binaries are shared with the loopback set. hack/e2e.sh starts this set after the
# local cluster is up and exports E2E_OBJSTORES_ENV; test/e2e/framework/objstores.go reads it.
#
# OBJSTORES_ONLY=minio (any of minio, fake-gcs, azurite) builds and starts only those; make demo
# sets it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
FAKE_GCS_VERSION="${FAKE_GCS_VERSION:-v1.56.1}"
AZURITE_VERSION="${AZURITE_VERSION:-3.37.0}"

OBJ_DIR="$CACHE_DIR/objstores"
BIND="${OBJSTORES_BIND:-127.0.0.1}"
S3_PORT=9000
if [ "$BIND" = 127.0.0.1 ]; then
  RUN_DIR="$OBJ_DIR/run"
  DATA_DIR="$OBJ_DIR/data"
  ENV_FILE="$OBJ_DIR/env"
else
  RUN_DIR="$OBJ_DIR/$BIND/run"
  DATA_DIR="$OBJ_DIR/$BIND/data"
  ENV_FILE="${OBJSTORES_ENV_FILE:-$OBJ_DIR/pods.env}"
  # MinIO also listens on loopback at its port, with SO_REUSEPORT: on 9000 it would share
  # 127.0.0.1:9000 with the loopback set's MinIO and the kernel would spread requests over both.
  S3_PORT=9100
fi

MINIO_BIN="$OBJ_DIR/minio-$MINIO_VERSION/minio"
FAKE_GCS_BIN="$OBJ_DIR/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server"
AZURITE_DIR="$OBJ_DIR/azurite-$AZURITE_VERSION"
AZURITE_BIN="$AZURITE_DIR/node_modules/.bin/azurite-blob"

# Test-only credentials for servers that listen on loopback or the local cluster's bridge only.
S3_ACCESS_KEY="etcd-suite"
S3_SECRET_KEY="etcd-suite-secret-key"
# Azurite's well-known development account (public, documented by Microsoft).
ABS_ACCOUNT="devstoreaccount1"
ABS_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

READY_TIMEOUT="${READY_TIMEOUT:-60}"

# go_install_cached <module@version> <binary path>: go install into a temporary GOBIN and move the
# binary into place only when the build succeeded, so a failed build is never taken for a cache hit.
go_install_cached() {
  local pkg="$1" bin="$2" tmp start
  [ -x "$bin" ] && return 0
  tmp="$(mktemp -d "$OBJ_DIR/.install.XXXXXX")"
  log "installing $pkg (cold build, this takes a while)"
  start=$SECONDS
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-trimpath go install -ldflags "-s -w" "$pkg")
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/$(basename "$bin")" "$bin"
  rm -rf "$tmp"
  log "installed $(basename "$bin") in $((SECONDS - start)) s"
}

install_azurite() {
  local tmp start
  [ -x "$AZURITE_BIN" ] && return 0
  tmp="$(mktemp -d "$OBJ_DIR/.install.XXXXXX")"
  log "installing azurite@$AZURITE_VERSION with npm"
  start=$SECONDS
  npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2
  rm -rf "$AZURITE_DIR"
  mv "$tmp" "$AZURITE_DIR"
  log "installed azurite in $((SECONDS - start)) s"
}

# OBJSTORES_ONLY="minio" (names of servers, space-separated) installs and starts only those:
# make demo needs MinIO alone, and on a fresh machine fake-gcs-server and Azurite cost minutes
# to build. The env file names all three either way; a later up without it adds the others.
ONLY="${OBJSTORES_ONLY:-minio fake-gcs azurite}"
wanted() { [[ " $ONLY " == *" $1 "* ]]; }

install_all() {
  mkdir -p "$OBJ_DIR"
  if wanted minio; then go_install_cached "github.com/minio/minio@$MINIO_VERSION" "$MINIO_BIN"; fi
  if wanted fake-gcs; then go_install_cached "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" "$FAKE_GCS_BIN"; fi
  if wanted azurite; then install_azurite; fi
}

pid_of() { cat "$RUN_DIR/$1.pid" 2>/dev/null || true; }

# running <name>: the recorded PID is alive and is still our server (its command line names a
# file under this set's $DATA_DIR), so a stale PID file never makes us signal an unrelated
# process, nor a server of the other set.
running() {
  local pid
  pid="$(pid_of "$1")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F "$DATA_DIR/" >/dev/null
}

# port_busy <port>: something listens on $BIND:<port> or on a wildcard address with that port.
port_busy() {
  ss -Hltn "sport = :$1" | awk -v want="$BIND:$1" -v port=":$1" '
    { a = $4 } a == want || a == "0.0.0.0" port || a == "*" port || a == "[::]" port { found = 1 }
    END { exit !found }'
}

# start <name> <port> <command...>: start a server detached from this shell with fresh state,
# recording its PID.
start() {
  local name="$1" port="$2"
  shift 2
  if running "$name"; then
    log "$name already running (pid $(pid_of "$name"))"
    return 0
  fi
  if port_busy "$port"; then
    log "port $port is taken by a process this script did not start; refusing to start $name"
    return 1
  fi
  if [ -f "$RUN_DIR/$name.crashed" ]; then
    log "$name was killed by '$0 kill': starting it again on its state"
    rm -f "$RUN_DIR/$name.crashed"
  else
    rm -rf "${DATA_DIR:?}/$name"
  fi
  mkdir -p "$DATA_DIR/$name" "$RUN_DIR"
  # Not a process-group leader here, so setsid execs in place and $! is the server's PID.
  # 8>&-: the server must not inherit (and so hold) the up/down lock.
  setsid "$@" >"$RUN_DIR/$name.log" 2>&1 </dev/null 8>&- &
  echo $! >"$RUN_DIR/$name.pid"
  log "started $name (pid $!), log $RUN_DIR/$name.log"
}

# wait_ready <name> <url>: any HTTP answer (even 4xx) from the URL means the server listens.
wait_ready() {
  local name="$1" url="$2" deadline=$((SECONDS + READY_TIMEOUT)) code
  while :; do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)"
    if [ -n "$code" ] && [ "$code" != "000" ]; then return 0; fi
    if ! running "$name"; then
      log "$name exited; last log lines:"
      tail -n 20 "$RUN_DIR/$name.log" >&2 || true
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$name not ready after ${READY_TIMEOUT}s"
      return 1
    fi
    sleep 0.5
  done
}

write_env() {
  cat >"$ENV_FILE" <<EOF
export OBJSTORE_S3_ENDPOINT=http://$BIND:$S3_PORT
export OBJSTORE_S3_ACCESS_KEY=$S3_ACCESS_KEY
export OBJSTORE_S3_SECRET_KEY=$S3_SECRET_KEY
export OBJSTORE_S3_REGION=us-east-1
export OBJSTORE_GCS_ENDPOINT=http://$BIND:4443/storage/v1/
export OBJSTORE_ABS_ENDPOINT=http://$BIND:10000/$ABS_ACCOUNT
export OBJSTORE_ABS_ACCOUNT=$ABS_ACCOUNT
export OBJSTORE_ABS_KEY=$ABS_KEY
EOF
}

up() {
  if [ "$BIND" != 127.0.0.1 ] && ! ip -o -4 addr show | awk '{ sub("/.*", "", $4); print $4 }' | grep -xF "$BIND" >/dev/null; then
    log "no interface has the address $BIND (for the local cluster's bridge: hack/local-cluster.sh up first)"
    return 1
  fi
  install_all
  if wanted minio; then
    MINIO_ROOT_USER="$S3_ACCESS_KEY" MINIO_ROOT_PASSWORD="$S3_SECRET_KEY" MINIO_BROWSER=off \
      start minio "$S3_PORT" "$MINIO_BIN" server --quiet --address "$BIND:$S3_PORT" "$DATA_DIR/minio"
  fi
  if wanted fake-gcs; then
    start fake-gcs 4443 "$FAKE_GCS_BIN" -scheme http -host "$BIND" -port 4443 \
      -backend filesystem -filesystem-root "$DATA_DIR/fake-gcs" \
      -public-host "$BIND:4443" -external-url "http://$BIND:4443" -log-level warn
  fi
  if wanted azurite; then
    start azurite 10000 "$AZURITE_BIN" --blobHost "$BIND" --blobPort 10000 \
      --location "$DATA_DIR/azurite" --skipApiVersionCheck --disableTelemetry --loose --silent
  fi
  if wanted minio; then wait_ready minio "http://$BIND:$S3_PORT/minio/health/live"; fi
  if wanted fake-gcs; then wait_ready fake-gcs "http://$BIND:4443/storage/v1/b"; fi
  if wanted azurite; then wait_ready azurite "http://$BIND:10000/$ABS_ACCOUNT?comp=list"; fi
  write_env
  log "object stores ready; env in $ENV_FILE"
}

stop() {
  local name="$1" pid
  pid="$(pid_of "$name")"
  if running "$name"; then
    kill "$pid"
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$RUN_DIR/$name.pid" "$RUN_DIR/$name.crashed"
  rm -rf "${DATA_DIR:?}/$name"
}

down() {
  stop minio
  stop fake-gcs
  stop azurite
  rm -f "$ENV_FILE"
}

# crash <name>: SIGKILL the server (no shutdown, like a crash) and mark its state to be kept.
crash() {
  local name="$1" pid
  case "$name" in minio | fake-gcs | azurite) ;; *)
    log "unknown server $name (minio, fake-gcs, azurite)"
    return 2
    ;;
  esac
  running "$name" || { log "$name is not running"; return 1; }
  pid="$(pid_of "$name")"
  touch "$RUN_DIR/$name.crashed"
  kill -KILL "$pid"
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  log "killed $name (pid $pid); its state is kept for the next up"
}

status() {
  local name rc=0
  for name in minio fake-gcs azurite; do
    if running "$name"; then
      echo "$name: running (pid $(pid_of "$name"))"
    else
      echo "$name: stopped"
      rc=1
    fi
  done
  return $rc
}

# lock: one up/down of a set at a time (hack/e2e.sh runs of several engineers share the set).
lock() {
  mkdir -p "$RUN_DIR"
  exec 8>"$RUN_DIR/.lock"
  flock -w 300 8 || { log "another $0 up/down holds $RUN_DIR/.lock"; exit 1; }
}

case "${1:-}" in
up) lock && up ;;
down) lock && down ;;
kill)
  shift
  lock
  for name in "$@"; do crash "$name" || exit $?; done
  ;;
status) status ;;
versions)
  echo "MinIO $MINIO_VERSION, fake-gcs-server $FAKE_GCS_VERSION, Azurite $AZURITE_VERSION"
  ;;
env)
  [ -f "$ENV_FILE" ] || { log "no env file: run '$0 up' first"; exit 1; }
  cat "$ENV_FILE"
  ;;
*)
  echo "usage: $0 up|down|status|env|versions|kill NAME..." >&2
  exit 2
  ;;
esac
