package restoreseed

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Command is the first argument that turns the restore-operator binary into the seed agent:
// restore-operator seed install <dir> | restore-operator seed restore [flags].
const Command = "seed"

// AgentName is the file name Install gives the copied binary.
const AgentName = "etcd-restore-seed"

// Options of the restore step, set by the restore operator as flags on the init container.
type Options struct {
	// Location is the verified backup object and how to reach it (storage.Location.Encode).
	Location storage.Location
	// SecretsDir is where the Secrets Location names are mounted (storage.PodSecrets).
	SecretsDir string
	// AuthDir is where the cluster's spec.auth Secret is mounted (keys username, password);
	// empty for a cluster without spec.auth.
	AuthDir string
	// BumpRevision raises the restored revision by this much and marks it compacted (etcdutl
	// snapshot restore --bump-revision --mark-compacted); 0 keeps the backup's revisions.
	BumpRevision int64
	// PointInTime, when set, brings the backup to this target before it is restored, by
	// replaying the continuous capture that followed it (pkg/capture.Replay); the zero Target
	// replays every captured revision. The capture is the one stored next to the backup: the
	// same prefix and cluster identity, read from the backup's key.
	PointInTime    *capture.Target
	Expect         Expect
	DataDir        string
	Name           string
	InitialCluster string
	ClusterToken   string
	PeerURL        string
	Etcdutl        string
	ResultFile     string
	Timeout        time.Duration
}

// workDir is where the snapshot is downloaded and restored before the rename: next to the
// data dir, on the same volume.
func (o *Options) workDir() string { return filepath.Join(filepath.Dir(o.DataDir), "restore-work") }

// savedResult is the copy of the Result kept on the data volume for runs after the first.
func (o *Options) savedResult() string {
	return filepath.Join(filepath.Dir(o.DataDir), "restore-result.json")
}

// Main runs the agent with args (after Command) and returns the process exit code.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: restore-operator seed install <dir> | restore [flags]")
		return 2
	}
	switch args[0] {
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: restore-operator seed install <dir>")
			return 2
		}
		if err := Install(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "restore":
		o, err := ParseRestoreArgs(args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		res := Restore(ctx, o)
		out := res.encode()
		fmt.Println(string(out))
		if o.ResultFile != "" {
			if err := os.WriteFile(o.ResultFile, out, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "writing result:", err)
			}
		}
		if res.Outcome == OutcomeFailed {
			return 1
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "unknown seed command %q\n", args[0])
		return 2
	}
}

// ParseRestoreArgs reads the flags of `seed restore` (what the restore operator writes into the
// seed pod) into Options.
func ParseRestoreArgs(args []string) (*Options, error) {
	o := &Options{}
	var loc string
	fs := flag.NewFlagSet("seed restore", flag.ContinueOnError)
	fs.StringVar(&loc, "location", "", "the backup object and how to reach it, as the restore operator encodes it")
	fs.StringVar(&o.SecretsDir, "secrets-dir", "", "directory where the location's Secrets are mounted, one sub-directory each")
	fs.StringVar(&o.AuthDir, "auth-dir", "", "directory where the cluster's auth Secret is mounted (empty: the cluster has no spec.auth)")
	fs.Int64Var(&o.BumpRevision, "bump-revision", 0, "raise the restored revision by this much and mark it compacted (0: keep the backup's revisions)")
	fs.Int64Var(&o.Expect.Size, "size", 0, "expected object size in bytes (0: not checked)")
	fs.StringVar(&o.Expect.SHA256, "sha256", "", "expected hex sha256 of the object (empty: not checked)")
	fs.StringVar(&o.DataDir, "data-dir", "/var/etcd/data", "etcd data dir to create")
	fs.StringVar(&o.Name, "name", "", "member name")
	fs.StringVar(&o.InitialCluster, "initial-cluster", "", "--initial-cluster of the seed")
	fs.StringVar(&o.ClusterToken, "initial-cluster-token", "", "--initial-cluster-token of the seed")
	fs.StringVar(&o.PeerURL, "initial-advertise-peer-urls", "", "peer URL of the seed")
	fs.StringVar(&o.Etcdutl, "etcdutl", "/usr/local/bin/etcdutl", "the etcd image's etcdutl")
	fs.StringVar(&o.ResultFile, "result-file", "/dev/termination-log", "where to write the JSON result")
	fs.DurationVar(&o.Timeout, "timeout", time.Hour, "give up after this long")
	var pit capture.Target
	var toTime string
	replay := fs.Bool("point-in-time", false, "replay the continuous capture after the backup onto it before restoring (to --to-revision or --to-time; neither: the newest captured revision)")
	fs.Int64Var(&pit.Revision, "to-revision", 0, "with --point-in-time: the last revision to replay")
	fs.StringVar(&toTime, "to-time", "", "with --point-in-time: replay the revisions captured at or before this time (RFC 3339)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if toTime != "" {
		t, err := time.Parse(time.RFC3339Nano, toTime)
		if err != nil {
			return nil, fmt.Errorf("--to-time: %w", err)
		}
		pit.Time = t
	}
	if *replay {
		o.PointInTime = &pit
	} else if pit != (capture.Target{}) {
		return nil, errors.New("--to-revision and --to-time need --point-in-time")
	}
	if loc == "" || o.Name == "" || o.InitialCluster == "" || o.PeerURL == "" {
		return nil, errors.New("seed restore needs --location, --name, --initial-cluster and --initial-advertise-peer-urls")
	}
	var err error
	if o.Location, err = storage.Decode(loc); err != nil {
		return nil, fmt.Errorf("--location: %w", err)
	}
	return o, nil
}

// Install copies the running binary to dir/AgentName, executable, so a container of another
// image can run it.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding own binary: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("opening own binary: %w", err)
	}
	defer src.Close()
	dst := filepath.Join(dir, AgentName)
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return fmt.Errorf("copying to %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("installing %s: %w", dst, err)
	}
	return nil
}

// Restore makes o.DataDir from the backup, or reports that it already exists.
func Restore(ctx context.Context, o *Options) *Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res, err := restore(ctx, o)
	if err != nil {
		res = &Result{Outcome: OutcomeFailed, Reason: reason.OrDefault(err, etcdv1beta2.ReasonSeedFailed), Message: err.Error()}
		if ctx.Err() != nil {
			res.Reason = etcdv1beta2.ReasonTimeout
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

func restore(ctx context.Context, o *Options) (*Result, error) {
	if _, err := os.Stat(filepath.Join(o.DataDir, "member")); err == nil {
		res := &Result{}
		if b, err := os.ReadFile(o.savedResult()); err == nil {
			if prev, err := ParseResult(string(b)); err == nil {
				res = prev
			}
		}
		res.Outcome = OutcomeAlreadyRestored
		res.Message = "data dir " + o.DataDir + " exists: restored before, not restoring again"
		return res, nil
	}
	work := o.workDir()
	if err := os.RemoveAll(work); err != nil { // a previous attempt that did not finish
		return nil, fmt.Errorf("cleaning %s: %w", work, err)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", work, err)
	}
	if err := checkFreeSpace(work, o.Expect.Size); err != nil {
		return nil, err
	}

	b, err := storage.Open(ctx, o.Location, storage.DirSecrets{Root: o.SecretsDir}, storage.TenantIdentity)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	snap := filepath.Join(work, "snapshot.db")
	f, err := os.Create(snap)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", snap, err)
	}
	got, err := Fetch(ctx, b, o.Location.Key, o.Expect, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", snap, cerr)
	}
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return nil, reason.Errorf(etcdv1beta2.ReasonInsufficientStorage, "data volume full while downloading the backup: %w", err)
		}
		return nil, err
	}
	res := &Result{Outcome: OutcomeRestored, Size: got.Size, SHA256: got.SHA256}
	verified := hasTrailer(got.Size)
	if o.PointInTime != nil {
		if res.PointInTime, err = replay(ctx, b, o.Location.Key, snap, got.Size, *o.PointInTime); err != nil {
			return nil, err
		}
		verified = true // the replay left the file without etcd's trailer
	}

	// No `etcdutl snapshot status` first: it reads and checksums the whole database once more
	// for its revision (at 1 GiB, seconds of each member's restore on a shared node), which the
	// hash of the restored data below gives too.
	tmpData := filepath.Join(work, "data")
	args := []string{"snapshot", "restore", snap, "--data-dir", tmpData, "--name", o.Name,
		"--initial-cluster", o.InitialCluster, "--initial-cluster-token", o.ClusterToken,
		"--initial-advertise-peer-urls", o.PeerURL}
	if verified {
		// Fetch has checked etcd's trailing sha256 while downloading; etcdutl would read and
		// hash the whole file once more (0.9 s of a 2.5 s restore at 1 GiB). It still cuts the
		// trailer off a file of this size, as it does after its own check. Any other size it
		// takes for a file without a trailer, so it checks that one itself; after a replay the
		// file has no trailer, and Fetch checked the object it started from.
		args = append(args, "--skip-hash-check")
	}
	if o.BumpRevision > 0 {
		if err := canBump(ctx, o.Etcdutl); err != nil {
			return nil, err
		}
		// The backup's revisions are compacted away at the bumped one: the data is checked, and
		// served, at the revision etcd starts at.
		args = append(args, "--bump-revision", strconv.FormatInt(o.BumpRevision, 10), "--mark-compacted")
	}
	if err := run(ctx, o.Etcdutl, args...); err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "etcdutl snapshot restore: %w", err)
	}
	// The verification values, computed from the restored data at rest (internal/kvhash: etcd's
	// own hashkv cannot read a keyspace with leases), at the data's current revision, the one
	// etcd starts at: the snapshot's newest (0 for one that holds no key revision: an empty
	// keyspace, or one whose keys were all deleted and compacted), raised by the bump if any
	// (etcdutl writes the bumped revision as the newest and compacts at it).
	deadline, _ := ctx.Deadline()
	h, err := kvhash.File(filepath.Join(tmpData, "member", "snap", "db"), 0, kvhash.Options{Deadline: deadline})
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "computing the keyspace hash of the restored data: %w", err)
	}
	if o.BumpRevision > 0 {
		res.BackupRevision = h.Revision - o.BumpRevision
	}
	res.Revision, res.HashKV, res.CompactRevision, res.Keys = h.Revision, h.Hash, h.CompactRevision, h.Keys
	if err := checkAuth(filepath.Join(tmpData, "member", "snap", "db"), o.AuthDir); err != nil {
		return nil, err
	}
	if err := os.Remove(snap); err != nil {
		return nil, fmt.Errorf("removing %s: %w", snap, err)
	}
	if err := os.WriteFile(o.savedResult(), res.encode(), 0o600); err != nil {
		return nil, fmt.Errorf("saving result: %w", err)
	}
	// The rename is the commit point: before it a restarted pod starts over, after it the data
	// dir is complete.
	if err := os.Rename(tmpData, o.DataDir); err != nil {
		return nil, fmt.Errorf("moving the restored data into %s: %w", o.DataDir, err)
	}
	if err := os.RemoveAll(work); err != nil {
		return nil, fmt.Errorf("cleaning %s: %w", work, err)
	}
	res.Message = fmt.Sprintf("restored %d bytes at revision %d into %s", res.Size, res.Revision, o.DataDir)
	return res, nil
}

// hasTrailer reports whether etcdutl takes a snapshot of size bytes for one that ends with
// etcd's sha256 (its hasChecksum): a bbolt file is whole 512-byte sectors, the trailer 32 bytes.
func hasTrailer(size int64) bool { return size%512 == snapshot.TrailerSize }

// checkFreeSpace fails unless the volume of dir can hold the download, the restored database
// and etcd's first WAL file: twice the object plus 128 MiB.
func checkFreeSpace(dir string, size int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("checking free space of %s: %w", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) //nolint:gosec // block counts fit in int64
	need := 2*size + 128<<20
	if free < need {
		return reason.Errorf(etcdv1beta2.ReasonInsufficientStorage, "the data volume has %d MiB free, the restore needs about %d MiB (twice the %d-byte backup plus 128 MiB)", free>>20, need>>20, size)
	}
	return nil
}
