package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
)

// ErrHashMismatch: the stored object's keyspace hash differs from the live member's HashKV at
// the same revision and compaction: the object does not hold the member's keyspace.
var ErrHashMismatch = errors.New("stored backup does not match the live member's keyspace hash")

// HashKVCheck is the outcome of the check against the live cluster (Config.CheckHashKV).
type HashKVCheck struct {
	// Checked is true when the stored object's keyspace hash was compared with the member's
	// HashKV at Revision and they were equal (a difference fails the backup instead).
	Checked bool
	// Revision is the snapshot's revision and CompactRevision its compaction revision (-1:
	// never compacted), as read from the stored object; Hash is the keyspace hash at Revision
	// that the object and the member agree on (zero unless Checked).
	Hash            uint32
	Revision        int64
	CompactRevision int64
	// Skipped says why no comparison was made, when the check was on but did not compare (the
	// backup stands): the member compacted past the snapshot's revision, was unreachable, ...
	Skipped string
	// Duration is how long reading the object back, hashing it and asking the member took.
	Duration time.Duration
}

// hashKVSince is the first etcd release whose HashKV kvhash computes (kvhash follows etcd
// 3.5.16's algorithm; earlier releases hash a tombstone at the compaction revision).
var hashKVSince = [3]int{3, 5, 16}

// hashKVThroughput is how fast a member is assumed to hash its keyspace at least, in bytes per
// second: etcd reads every revision up to the one asked for from bbolt. Measured 2026-11-27
// (2 cores, etcd 3.6.16): a 122 MiB database of 100 MiB values and 200,000 keys in 80 ms, so
// this leaves a wide margin for a loaded member and slow disks. clientv3 waits for a member
// that went away until its context ends, so the call gets its own bound, well under a backup's
// timeout.
const hashKVThroughput = 20 << 20

func hashKVTimeout(request time.Duration, dbSize int64) time.Duration {
	return request + time.Duration(dbSize/hashKVThroughput)*time.Second
}

// checkHashKV reads the object stored under key back into a temporary file, computes its
// keyspace hash at its own revision R (kvhash, etcd's algorithm over the bbolt file) and
// compares it with HashKV(R) of the member m the snapshot came from, asked through cli.
//
// It reads the object back rather than teeing the stream on its way to the store: a copy of
// the stream would only prove what etcd sent, which VerifyingReader already checked against
// etcd's trailer; reading back proves what the store holds, which is what a restore gets. The
// price is one download of the object (and one file of its size in Config.TempDir, removed
// before returning).
//
// It returns an error only when the stored object is known to be bad: it fails etcd's own
// checksum when read back (ErrChecksumMismatch, ErrTruncated), or its hash differs from the
// member's (ErrHashMismatch). A check that cannot run to a comparison never fails a backup that
// passed etcd's checksum: HashKVCheck.Skipped says why (the member compacted past R, so
// HashKV(R) is gone, or compacted after the snapshot, so the two hashes cover different
// revisions; the member or the store unreachable; an etcd before 3.5.16).
func checkHashKV(ctx context.Context, cfg *Config, cli *clientv3.Client, m Member, b backend.Backend, key string) (check HashKVCheck, err error) {
	start := cfg.now()
	defer func() { check.Duration = cfg.now().Sub(start) }()
	if !hashKVComparable(m.Version) {
		check.Skipped = fmt.Sprintf("etcd %s computes HashKV differently before %d.%d.%d", m.Version, hashKVSince[0], hashKVSince[1], hashKVSince[2])
		return check, nil
	}
	stored, err := hashStored(ctx, cfg, b, key)
	switch {
	case errors.Is(err, ErrChecksumMismatch), errors.Is(err, ErrTruncated), errors.Is(err, codec.ErrCorrupt):
		// The object read back is not what was written: its encryption or compression, or the
		// snapshot inside, is damaged. (An encrypted object the operator holds no identity for,
		// codec.ErrNoKey or ErrWrongKey, is skipped below: it was written whole.)
		return check, err
	case err != nil:
		check.Skipped = err.Error()
		return check, nil
	}
	check.Revision, check.CompactRevision = stored.Revision, stored.CompactRevision

	hctx, cancel := context.WithTimeout(ctx, hashKVTimeout(cfg.RequestTimeout, m.DbSize))
	defer cancel()
	live, err := cli.HashKV(hctx, m.Endpoint, stored.Revision)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		check.Skipped = fmt.Sprintf("%s compacted past revision %d before the check", m.Endpoint, stored.Revision)
		return check, nil
	case err != nil:
		check.Skipped = fmt.Sprintf("HashKV of %s at revision %d: %v", m.Endpoint, stored.Revision, err)
		return check, nil
	case m.ClusterID != 0 && live.Header.ClusterId != m.ClusterID:
		check.Skipped = fmt.Sprintf("%s answered for cluster %x, the snapshot came from cluster %x", m.Endpoint, live.Header.ClusterId, m.ClusterID)
		return check, nil
	case live.CompactRevision != stored.CompactRevision:
		// A compaction between the snapshot and the check: etcd hashes only the revisions a
		// compaction keeps, so the hashes cover different sets and are not comparable. (A
		// compaction at exactly R still compares: etcd answers HashKV(R) with the hash it
		// computed before compacting, with the earlier compaction revision; seen with 3.6.16.)
		check.Skipped = fmt.Sprintf("%s compacted at revision %d after the snapshot (compacted at %d): the hashes are not comparable",
			m.Endpoint, live.CompactRevision, stored.CompactRevision)
		return check, nil
	case live.Hash != stored.Hash:
		return check, fmt.Errorf("%w: at revision %d (compacted at %d) the object hashes to %08x, member %x at %s to %08x",
			ErrHashMismatch, stored.Revision, stored.CompactRevision, stored.Hash, m.ID, m.Endpoint, live.Hash)
	}
	check.Checked, check.Hash = true, live.Hash
	return check, nil
}

// hashStored downloads the object under key through a VerifyingReader into a temporary file in
// cfg.TempDir, cuts etcd's trailer off and computes its keyspace hash at its own revision. The
// file is removed before it returns.
func hashStored(ctx context.Context, cfg *Config, b backend.Backend, key string) (*kvhash.Result, error) {
	f, err := os.CreateTemp(cfg.TempDir, "etcd-backup-check-*.db")
	if err != nil {
		return nil, fmt.Errorf("creating a file to read the object back into: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	err = download(ctx, b, key, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", f.Name(), cerr)
	}
	if err != nil {
		return nil, err
	}
	var opts kvhash.Options
	if d, ok := ctx.Deadline(); ok {
		opts.Deadline = d
	}
	res, err := kvhash.File(f.Name(), 0, opts)
	if err != nil {
		return nil, fmt.Errorf("hashing the keyspace of the object read back: %w", err)
	}
	return res, nil
}

// download copies the object under key into f, checking etcd's trailer, and cuts the trailer
// off: what is left is the bbolt file.
func download(ctx context.Context, b backend.Backend, key string, f *os.File) error {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("reading the object back: %w", err)
	}
	defer rc.Close()
	vr := NewVerifyingReader(rc)
	if _, err := io.Copy(f, vr); err != nil {
		return fmt.Errorf("reading the object back into %s: %w", f.Name(), err)
	}
	if err := f.Truncate(vr.Size() - TrailerSize); err != nil {
		return fmt.Errorf("cutting the checksum off %s: %w", f.Name(), err)
	}
	return nil
}

// hashKVComparable reports whether a member of etcd version v ("3.6.16") computes HashKV as
// kvhash does; an unparsable version is not trusted.
func hashKVComparable(v string) bool {
	v, _, _ = strings.Cut(v, "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		switch {
		case err != nil:
			return false
		case n != hashKVSince[i]:
			return n > hashKVSince[i]
		}
	}
	return true
}
