#!/usr/bin/env bash
# The disaster-recovery drill (make demo, docs/demo.md): on the local cluster, a 3-member
# EtcdCluster on volumes gets ~50k keys, an EtcdBackupSchedule backs it up into MinIO, the
# application keeps writing, every member pod and volume is deleted, an EtcdRestore brings the
# cluster back from the backup, and every key and value is checked. Prints one line per step and
# a report (RPO, RTO, verification), also written to .cache/demo/report.txt; exits non-zero on
# any failure or wrong key.
#
#   hack/demo.sh [hack/demo flags...]    e.g. hack/demo.sh -keys 10000 -restore-from schedule
#
# Like hack/e2e.sh it first brings up (idempotent, cached) the local cluster, the images, the
# pod-reachable object stores on the bridge address and the operators. DEMO_SKIP_SETUP=1 skips
# that when they are known to be up. Before all that, hack/demo/preflight/preflight.sh checks the
# prerequisites (root, cgroups, kernel modules, free ports, disk) and names what is missing
# (DEMO_SKIP_PREFLIGHT=1 skips it). DEMO_RESTORE_FROM=schedule restores through
# backupScheduleRef instead of the coreos-shaped s3 block. The namespace etcd-demo is deleted
# and recreated by every run and left in place afterwards for inspection.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT_DIR/hack/local-cluster/env.sh"

start=$SECONDS
# Root, cgroups, kernel modules, free ports and disk, before anything is built.
if [ "${DEMO_SKIP_PREFLIGHT:-}" != 1 ]; then
  "$ROOT_DIR/hack/demo/preflight/preflight.sh" || exit 1
fi
if [ "${DEMO_SKIP_SETUP:-}" != 1 ]; then
  # The drill backs up into MinIO only: fake-gcs-server and Azurite are not built for it.
  OBJSTORES_ONLY="${OBJSTORES_ONLY:-minio}" local_stack_up || exit 1
  timed "deploy" "$ROOT_DIR/hack/deploy.sh" apply || exit 1
fi
export KUBECONFIG="$LC_KUBECONFIG"
export E2E_OBJSTORES_ENV="${E2E_OBJSTORES_ENV:-$CACHE_DIR/objstores/pods.env}"
export E2E_CLUSTER_DNS="${E2E_CLUSTER_DNS:-$LC_BRIDGE_IP:53}"
export E2E_KUBECTL="${E2E_KUBECTL:-$KUBECTL}"

mkdir -p "$CACHE_DIR/demo"
cd "$ROOT_DIR" || exit 1
timed "building the drill (hack/demo)" go build -tags e2e -o "$CACHE_DIR/demo/demo" ./hack/demo
log "setup took $((SECONDS - start))s; starting the drill"
rc=0
"$CACHE_DIR/demo/demo" "$@" || rc=$?
log "make demo took $((SECONDS - start))s in all (exit $rc)"
exit $rc
