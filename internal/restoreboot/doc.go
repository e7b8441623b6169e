// Package restoreboot builds the members of an EtcdCluster from a backup: etcd's own
// disaster-recovery procedure, run inside each member's pod. Every member restored at once gets
// two init containers before etcd: the operator image copies the restore agent
// (internal/restoreseed) into a shared emptyDir, and that agent, run inside the etcd image so
// that etcdutl matches the etcd that will serve the data, fetches the backup object, checks it,
// restores it with the full initial cluster and reports the keyspace hash and key count it
// restored through its termination message (Result). Members then reads those reports, and
// CheckMember asks each running member for the same figures (the Restored condition).
//
// The etcd operator alone creates and deletes these pods (spec.bootstrap.restore.source); the
// restore operator uses Pod for the throwaway pod that proves a backup restorable before an
// in-place restore touches anything.
package restoreboot
