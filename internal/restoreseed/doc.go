// Package restoreseed is the part of a restore that runs inside the seed member's pod, and the
// check the restore operator makes before it touches any cluster.
//
// The seed pod has two init containers. The first runs the operator image and copies the
// restore-operator binary into a shared emptyDir (Install). The second runs that copy inside the
// etcd image, whose own etcdutl then matches the etcd version exactly (Restore): it fetches the
// snapshot from the object store with the credentials Secret mounted as files, checks its size,
// sha256 and etcd's own trailing checksum, checks free space, restores a data dir with
// `etcdutl snapshot restore` into a temporary directory, computes the keyspace hash and key count
// of the restored file at the backup's revision (internal/kvhash), and renames it into place. A data dir
// that already exists is left alone, so a restarted pod never restores twice. The outcome is
// written as JSON (Result) to the container's termination message, where the restore operator
// reads it, and next to the data dir, so a later run can repeat it.
package restoreseed
