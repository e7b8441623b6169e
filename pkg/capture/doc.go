// Package capture is continuous capture of an etcd keyspace between full backups (issue 29,
// "RPO in seconds"): after a full snapshot at revision R, a Capturer watches the whole keyspace
// from R+1 with previous values and streams every change, revision by revision, into segment
// objects in the store and under the prefix of the cluster's full backups. A restore to a
// point in time then replays the segments from the snapshot's revision + 1 onto the snapshot.
//
// It imports clientv3 and pkg/backend but not controller-runtime; the caller (a backup
// controller) owns the schedule, the full snapshots and the status.
//
// # Segment format
//
// A segment is one object, written whole (version 1, integers big-endian):
//
//	magic      "ETCDSEG1"
//	uint32     length of the header body
//	header     uint16 format version, uint64 cluster ID, int64 first and last revision,
//	           int64 first and last event time (Unix nanoseconds: when the capturer received
//	           the revision), int64 number of revisions (records), int64 number of events,
//	           then namespace and cluster name, each a uint16 length and its bytes
//	records    one per revision, in increasing order: uint32 length of the rest, int64
//	           revision, int64 time (Unix nanoseconds: when the capturer received it; the
//	           first and last are the header's), uint32 number of events, and each event as a uint32 length and an
//	           etcd mvccpb.Event in protobuf (type PUT or DELETE; the KeyValue with key, value,
//	           create_revision, mod_revision, version and lease; prev_kv when etcd had it)
//	trailer    the sha256 of every byte before it
//
// The summary sits in the header, so a reader knows a segment's range before its records. To
// write it there, the Capturer builds the open segment in memory (Builder) and fills the
// summary in when it closes the segment; the open segment is bounded by SegmentMaxBytes plus
// one revision. A Reader streams a segment in constant memory beyond one record and verifies
// it: magic, version, header, record framing and order, that the records match the summary,
// and the trailer at the end (errors wrap ErrCorrupt). Records are provisional until the
// trailer verified.
//
// # Keys
//
// Segments of cluster id under backup prefix p are
// p.segments/<namespace>_<cluster>_<cluster ID, 16 hex digits>/<first revision, 20 digits>-<last
// revision, 20 digits>_<UTC time of the first event>.seg (SegmentKey, ParseSegmentKey): one
// directory per cluster, keys in first-revision order. They never parse as backup keys
// (snapshot.SplitKey), so retention and backup selection, which list p, ignore them.
//
// # Guarantees
//
//   - No gap, no duplicate: segments hold contiguous revisions, each exactly once. Every etcd
//     revision is a change of at least one key and so at least one watch event; the Capturer
//     requires each revision to be the one after the last, restarts a failed watch from the
//     revision after the last one appended, and uploads segments strictly in revision order.
//     A Capturer started at LastCaptured + 1 continues where the last one stopped. Check
//     verifies a capture end to end.
//   - Bounded memory: the open segment (SegmentMaxBytes plus one revision) and the closed
//     segments waiting for upload (MaxBufferedBytes; beyond it Run returns ErrBufferFull).
//   - Never overwrite: before each upload the key is checked; an existing object must be
//     byte-identical (a retried upload), otherwise Run returns ErrConflict.
//   - An uploaded segment is complete and verified by its trailer; uploads are all-or-nothing
//     (backend.Backend.Put).
//   - A capture that stops (its context ended, compaction, another cluster answering) first
//     closes its open segment and stores what waits, within FlushTimeout.
//
// # Replay
//
// Replay brings a full backup's bbolt file to a target (a revision, a time, or the newest
// revision captured) by writing the captured changes into it as etcd's store writes them:
// the same revisions and sub revisions, create revisions and versions, tombstones for
// deletions, so that etcd run on the result serves the captured cluster's keyspace and HashKV
// at that revision. Each change is checked against the data's key index before it is written.
// Resolve finds the revision a target comes to without data, so that the members of one
// restore all replay to the same revision. A capture may start at the revision a backup's key
// records (the member's revision reported before the snapshot) + 1: revisions the snapshot
// already holds are skipped.
//
// # Left to the caller
//
//   - The full snapshot, and a new one when Run returns ErrCompacted (etcd compacted the
//     revision to capture next) or when the store stayed down past ErrBufferFull for longer
//     than etcd keeps history.
//   - Leases and auth: the watch stream carries key changes only. A key's lease ID is in its
//     events, but lease grants, TTLs and keep-alives, and users, roles and permissions, are not
//     in the stream. A key deleted by a lease's expiry or revocation is an ordinary DELETE. A
//     point-in-time restore takes leases and auth from the snapshot (and must decide what to do
//     with keys attached to leases that no longer exist).
//   - Running one Capturer per cluster (leader election): two would write overlapping
//     segments under different keys, which Check reports as duplicates.
//   - Retention of segments older than the oldest full backup kept, and metrics from Progress.
//   - The client's credentials: its user must read the whole keyspace.
package capture
