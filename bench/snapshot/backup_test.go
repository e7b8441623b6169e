//go:build bench

// Package snapshot benchmarks a backup (pkg/snapshot.Take into MinIO) against what a person
// would run by hand, in the same run on the same etcd and the same MinIO (issue 17, item 2):
//
//   - raw read: the snapshot stream read to the end and thrown away (clientv3 Snapshot): the
//     fastest any backup of this member can be;
//   - etcdctl: `etcdctl snapshot save` to a file, then the file uploaded with the AWS SDK's
//     upload manager (same part size and concurrency as ours), as a person or a CronJob would;
//   - ours: snapshot.Take (stream, verify etcd's checksum, multipart upload) in a process of its
//     own, whose peak RSS (VmHWM) is the backup's memory.
//
// and what compression (zstd) and encryption (age) cost (encoding_test.go): the same backup
// through backend.WithEncoding in each format, and a restore's read of what it stored, each
// against the plain backup and the plain read of the same run.
//
// Run it with `make bench` (hack/bench.sh): it needs the etcd binaries (hack/build-etcd.sh) and
// the object stores (hack/objstores.sh up, the OBJSTORE_S3_* variables). Sizes come from
// BENCH_BACKUP_SIZES (default 64MiB,256MiB,1GiB,4GiB), runs from BENCH_RUNS (3); the table goes to
// BENCH_BACKUP_OUT (default bench/results/backup.md) and its .json. The encoding rows run at
// BENCH_ENCODING_SIZES (default 256MiB,1GiB; empty: none) on BENCH_ENCODING_DATA (json, the
// default, or random). Nothing asserts a time: targets are printed beside the figures.
package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

const mib = benchutil.MiB

// Targets of issue 17 for a backup.
const (
	targetManualRatio = 0.6 // at most 0.6x etcdctl snapshot save + upload
	targetRawRatio    = 2.0 // at most 2x the raw read
	targetRSSMiB      = 128 // peak RSS at every size
)

// row is one database size's figures, each one value per run.
type row struct {
	Size        string    `json:"size"`
	SnapshotMiB float64   `json:"snapshotMiB"`
	Raw         []float64 `json:"rawSeconds"`
	Manual      []float64 `json:"etcdctlSeconds"`
	Ours        []float64 `json:"oursSeconds"`
	RSSMiB      []float64 `json:"oursPeakRSSMiB"`
}

func TestBackupBench(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("child process")
	}
	store := s3Env(t)
	runs := benchutil.Int(t, "BENCH_RUNS", 3)
	encSizes, data := encodingSizes(t), encodingData(t)
	var rows []row
	for _, size := range benchutil.Sizes(t, "BENCH_BACKUP_SIZES", "64MiB,256MiB,1GiB,4GiB") {
		t.Run(benchutil.SizeName(size), func(t *testing.T) { rows = append(rows, benchSize(t, store, size, runs)) })
	}
	var enc []encodingRow
	if len(encSizes) > 0 {
		id := ageIdentity(t)
		for _, size := range encSizes {
			t.Run("encoding/"+benchutil.SizeName(size), func(t *testing.T) {
				enc = append(enc, benchEncoding(t, store, id, size, data, runs))
			})
		}
	}
	write(t, rows, enc, runs)
}

// benchSize fills a fresh one-member etcd with size bytes of 1 MiB random values and measures
// the three ways of backing it up, runs times each.
func benchSize(t *testing.T, store s3.Config, size int64, runs int) row {
	e, cli := filledEtcd(t, size, randomData)

	r := row{Size: benchutil.SizeName(size)}
	up := rawUploader(store)
	for i := range runs {
		secs, n := rawRead(t, cli)
		r.Raw, r.SnapshotMiB = append(r.Raw, secs), float64(n)/mib
		r.Manual = append(r.Manual, etcdctlAndUpload(t, e.Endpoint, up, store.Bucket, fmt.Sprintf("manual/%d-%d", size, i)))
		res := child(t, childJob{Op: opBackup, Endpoint: e.Endpoint, Key: fmt.Sprintf("ours/%d-%d", size, i)})
		r.Ours, r.RSSMiB = append(r.Ours, res.Seconds), append(r.RSSMiB, float64(res.PeakRSS)/mib)
		t.Logf("%s run %d: raw %.1f s, etcdctl+upload %.1f s, ours %.1f s (peak RSS %.0f MiB)", r.Size, i, r.Raw[i], r.Manual[i], r.Ours[i], r.RSSMiB[i])
	}
	return r
}

// filledEtcd starts a fresh one-member etcd and fills it with size bytes of 1 MiB values of
// the data set data.
func filledEtcd(t *testing.T, size int64, data string) (*snapshottest.Etcd, *clientv3.Client) {
	e := snapshottest.NewEtcd(t, "bench", nil)
	e.Args = []string{"--quota-backend-bytes", strconv.FormatInt(max(2<<30, size*3/2+512*mib), 10)}
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	cli := e.Client(t)
	start := time.Now()
	fill(t, cli, int(size/mib), dataSets[data])
	t.Logf("%s: filled with %s values in %s", benchutil.SizeName(size), data, time.Since(start).Round(time.Millisecond))
	return e, cli
}

// fill writes n values of 1 MiB, made by next (random for the plain rows, so nothing on the way
// can compress them), with four writers.
func fill(t *testing.T, cli *clientv3.Client, n int, next values) {
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			rng := rand.NewChaCha8([32]byte{byte(w)})
			val := make([]byte, mib-64)
			for i := w; i < n; i += writers {
				next(rng, val)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := cli.Put(ctx, fmt.Sprintf("/bench/%08d", i), string(val))
				cancel()
				if err != nil {
					errs <- fmt.Errorf("put %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// rawRead reads the member's snapshot stream to the end and returns the seconds and bytes.
func rawRead(t *testing.T, cli *clientv3.Client) (float64, int64) {
	start := time.Now()
	rc, err := cli.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start).Seconds(), n
}

// etcdctlAndUpload runs `etcdctl snapshot save` into a file and uploads the file, and returns
// the seconds both took.
func etcdctlAndUpload(t *testing.T, endpoint string, up *manager.Uploader, bucket, key string) float64 {
	file := filepath.Join(t.TempDir(), "snap.db")
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), snapshottest.Bin(t, "etcdctl"), "--endpoints", endpoint, "snapshot", "save", file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot save: %v: %s", err, out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := up.Upload(t.Context(), &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: f}); err != nil {
		t.Fatalf("uploading %s: %v", file, err)
	}
	secs := time.Since(start).Seconds()
	_ = os.Remove(file)
	return secs
}

func rawUploader(store s3.Config) *manager.Uploader {
	client := awss3.New(awss3.Options{
		Region: store.Region, BaseEndpoint: aws.String(store.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(store.Credentials.AccessKeyID, store.Credentials.SecretAccessKey, ""),
	})
	return manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize, u.Concurrency = s3.DefaultPartSize, s3.DefaultConcurrency
	})
}

// childEnv, when set, makes TestBackupChild do one childJob (in JSON).
const childEnv = "BENCH_BACKUP_CHILD"

// What a child does.
const (
	opBackup  = "backup"  // snapshot.Take of Endpoint into Key
	opRestore = "restore" // Key read to the end as a restore's fetch reads it
)

// childJob is one backup or one restore read of TestBackupChild, through backend.WithEncoding
// in Format (the zero Format: plain, which passes Put straight through to the store).
type childJob struct {
	Op       string       `json:"op"`
	Format   codec.Format `json:"format"`
	Endpoint string       `json:"endpoint,omitempty"`
	Key      string       `json:"key"`
	// Identity is the age identity (AGE-SECRET-KEY-1...) of the encoding rows, generated for
	// the run: encrypted formats encrypt to its recipient, reads decrypt with it.
	Identity string `json:"identity,omitempty"`
}

// childResult is what the child process prints after resultPrefix.
type childResult struct {
	Seconds float64 `json:"seconds"`
	Size    int64   `json:"size"` // of the snapshot (the plaintext)
	PeakRSS uint64  `json:"peakRSS"`
}

const resultPrefix = "BENCH-RESULT "

// goMemLimit is the backup operator's GOMEMLIMIT in manifests/deploy/backup-operator.yaml.
const goMemLimit = "64MiB"

// child does job (takes one backup with snapshot.Take, or reads one back) in a child process
// (this test binary again), so its peak RSS is the job's alone.
func child(t *testing.T, job childJob) childResult {
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBackupChild$", "-test.v")
	// GOMEMLIMIT as the backup operator's Deployment sets it (manifests/deploy): the child's
	// RSS is then the one the operator's backup stream would have.
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec), "GOMEMLIMIT="+goMemLimit)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s child: %v: %s", job.Op, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), resultPrefix); ok {
			var res childResult
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatalf("%s child printed no result: %s", job.Op, out)
	return childResult{}
}

// TestBackupChild is the child process of child.
func TestBackupChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("only run as the bench's child process")
	}
	var job childJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	inner, err := s3.New(t.Context(), s3Env(t))
	if err != nil {
		t.Fatal(err)
	}
	b := backend.WithEncoding(inner, childEncoding(t, job))
	defer b.Close()
	runtime.GC()
	if err := benchutil.ResetPeak(benchutil.Self); err != nil {
		t.Fatal(err)
	}
	var res childResult
	switch job.Op {
	case opBackup:
		cfg := &snapshot.Config{Endpoints: []string{job.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
			Key: func(int64, time.Time) string { return job.Key }}
		taken, err := snapshot.Take(t.Context(), cfg, b)
		if err != nil {
			t.Fatal(err)
		}
		res = childResult{Seconds: taken.Duration.Seconds(), Size: taken.Size}
	case opRestore:
		res = restoreRead(t, b, job.Key)
	default:
		t.Fatalf("unknown op %q", job.Op)
	}
	res.PeakRSS = benchutil.PeakRSS(benchutil.Self)
	out, _ := json.Marshal(res)
	fmt.Println(resultPrefix + string(out))
}

// childEncoding is how the child's backend writes objects in job's format, and reads any
// format with job's identity, when it has one.
func childEncoding(t *testing.T, job childJob) backend.Encoding {
	enc := backend.Encoding{Write: codec.Options{Compress: job.Format.Compressed}}
	if job.Identity != "" {
		id, err := age.ParseX25519Identity(job.Identity)
		if err != nil {
			t.Fatal(err)
		}
		enc.Identities = []age.Identity{id}
		if job.Format.Encrypted {
			enc.Write.Recipients = []age.Recipient{id.Recipient()}
		}
	} else if job.Format.Encrypted {
		t.Fatalf("format %s without an identity", job.Format)
	}
	return enc
}

// restoreRead reads key to the end as a restore's fetch does (internal/restoreseed.Fetch):
// Get through the decoding backend, the stream checked by a snapshot.VerifyingReader, copied
// with io.Copy's own buffer (the destination here discards).
func restoreRead(t *testing.T, b backend.Backend, key string) childResult {
	start := time.Now()
	rc, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	vr := snapshot.NewVerifyingReader(rc)
	_, err = io.Copy(struct{ io.Writer }{io.Discard}, vr)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	if !vr.Verified() {
		t.Fatalf("reading %s: etcd's checksum not verified", key)
	}
	return childResult{Seconds: time.Since(start).Seconds(), Size: vr.Size()}
}

// s3Env is the MinIO that hack/objstores.sh runs, with the bucket of this bench.
func s3Env(t *testing.T) s3.Config {
	endpoint := os.Getenv("OBJSTORE_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("OBJSTORES_REQUIRED") != "" {
			t.Fatal("OBJSTORE_S3_ENDPOINT unset but OBJSTORES_REQUIRED is set")
		}
		t.Skip("OBJSTORE_S3_ENDPOINT unset: run hack/objstores.sh up and source .cache/objstores/env (make bench does)")
	}
	cfg := s3.Config{Bucket: "bench-backup", Region: os.Getenv("OBJSTORE_S3_REGION"), Endpoint: endpoint, ForcePathStyle: true,
		Credentials: &s3.Credentials{AccessKeyID: os.Getenv("OBJSTORE_S3_ACCESS_KEY"), SecretAccessKey: os.Getenv("OBJSTORE_S3_SECRET_KEY")}}
	if os.Getenv(childEnv) == "" {
		client := awss3.New(awss3.Options{Region: cfg.Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, "")})
		_, _ = client.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}) // exists from an earlier run: fine
		t.Cleanup(func() { benchutil.EmptyBucket(client, cfg.Bucket) })
	}
	return cfg
}

// write prints the table to BENCH_BACKUP_OUT and its .json.
func write(t *testing.T, rows []row, enc []encodingRow, runs int) {
	out := os.Getenv("BENCH_BACKUP_OUT")
	if out == "" {
		t.Log("BENCH_BACKUP_OUT not set: results not written")
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Backup bench: pkg/snapshot against etcdctl and the raw read, and what zstd and age cost\n\n")
	fmt.Fprintf(&b, "- Date: %s; %d cores, %s; %d runs per figure (min / median)\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), runs)
	fmt.Fprintf(&b, "- One etcd %s member and MinIO on loopback, the same for the three; %s. "+
		"raw: the snapshot stream read and discarded. etcdctl: `etcdctl snapshot save` to a file, then the file uploaded with the AWS SDK upload manager (%d MiB parts x %d). "+
		"ours: `snapshot.Take` (stream, etcd's checksum verified, multipart upload at the same part size and concurrency) in a process of its own with GOMEMLIMIT=%s as the operator's Deployment sets it; peak RSS is that process's VmHWM.\n",
		snapshottest.Version, dataDescriptions[randomData], s3.DefaultPartSize>>20, s3.DefaultConcurrency, goMemLimit)
	fmt.Fprintf(&b, "- Targets (issue 17): ours <= %.1fx etcdctl, <= %.0fx raw, peak RSS <= %d MiB\n\n", targetManualRatio, targetRawRatio, targetRSSMiB)
	fmt.Fprintf(&b, "| size | snapshot | raw s | etcdctl + upload s | ours s | ours / etcdctl | ours / raw | ours peak RSS | targets met |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		raw, manual, ours, rss := benchutil.Median(r.Raw), benchutil.Median(r.Manual), benchutil.Median(r.Ours), slices.Max(r.RSSMiB)
		met := []string{}
		for _, c := range []struct {
			ok   bool
			name string
		}{{ours/manual <= targetManualRatio, "etcdctl"}, {ours/raw <= targetRawRatio, "raw"}, {rss <= targetRSSMiB, "RSS"}} {
			if c.ok {
				met = append(met, c.name)
			} else {
				met = append(met, "**not "+c.name+"**")
			}
		}
		fmt.Fprintf(&b, "| %s | %.0f MiB | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.2fx | %.2fx | %.0f MiB | %s |\n",
			r.Size, r.SnapshotMiB, slices.Min(r.Raw), raw, slices.Min(r.Manual), manual, slices.Min(r.Ours), ours, ours/manual, ours/raw, rss, strings.Join(met, ", "))
	}
	if len(enc) > 0 {
		writeEncoding(&b, enc)
	}
	results := struct {
		Backup   []row         `json:"backup"`
		Encoding []encodingRow `json:"encoding,omitempty"`
	}{rows, enc}
	if err := benchutil.WriteResults(out, b.String(), results); err != nil {
		t.Fatal(err)
	}
	t.Logf("results in %s:\n%s", out, b.String())
}
