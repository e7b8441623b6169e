#!/usr/bin/env bash
# The disaster-recovery drill (make demo). Until the restore operator lands, this prints the
# plan and exits non-zero rather than pretending: see README "Status".
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cat <<'TXT'
make demo will, on this machine:
  1. bring up the local Kubernetes cluster and the object stores (make local-up, objstores-up)
  2. deploy the three operators (make deploy)
  3. create a 3-member EtcdCluster and write ~50k keys of varied sizes
  4. take a scheduled backup (EtcdBackupSchedule) into S3 (MinIO)
  5. simulate the disaster: delete every member pod and PVC
  6. restore with an EtcdRestore, verify every key and value
  7. print a report: backup size and duration, RPO (seconds and revisions), RTO, verification

Not available yet: it needs the restore operator (see README "Status").
TXT
exit 2
