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
// Run it with `make bench` (hack/bench.sh): it needs the etcd binaries (hack/build-etcd.sh) and
// the object stores (hack/objstores.sh up, the OBJSTORE_S3_* variables). Sizes come from
// BENCH_BACKUP_SIZES (default 64MiB,256MiB,1GiB,4GiB), runs from BENCH_RUNS (3); the table goes to
// BENCH_BACKUP_OUT (default bench/results/backup.md) and its .json. Nothing asserts a time:
// targets are printed beside the figures.
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
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
	var rows []row
	for _, size := range benchutil.Sizes(t, "BENCH_BACKUP_SIZES", "64MiB,256MiB,1GiB,4GiB") {
		t.Run(benchutil.SizeName(size), func(t *testing.T) { rows = append(rows, benchSize(t, store, size, runs)) })
	}
	write(t, rows, runs)
}

// benchSize fills a fresh one-member etcd with size bytes of 1 MiB random values and measures
// the three ways of backing it up, runs times each.
func benchSize(t *testing.T, store s3.Config, size int64, runs int) row {
	e := snapshottest.NewEtcd(t, "bench", nil)
	e.Args = []string{"--quota-backend-bytes", strconv.FormatInt(max(2<<30, size*3/2+512*mib), 10)}
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	cli := e.Client(t)
	start := time.Now()
	fill(t, cli, int(size/mib))
	t.Logf("%s: filled in %s", benchutil.SizeName(size), time.Since(start).Round(time.Millisecond))

	r := row{Size: benchutil.SizeName(size)}
	up := rawUploader(store)
	for i := range runs {
		secs, n := rawRead(t, cli)
		r.Raw, r.SnapshotMiB = append(r.Raw, secs), float64(n)/mib
		r.Manual = append(r.Manual, etcdctlAndUpload(t, e.Endpoint, up, store.Bucket, fmt.Sprintf("manual/%d-%d", size, i)))
		res := ours(t, e.Endpoint, fmt.Sprintf("ours/%d-%d", size, i))
		r.Ours, r.RSSMiB = append(r.Ours, res.Seconds), append(r.RSSMiB, float64(res.PeakRSS)/mib)
		t.Logf("%s run %d: raw %.1f s, etcdctl+upload %.1f s, ours %.1f s (peak RSS %.0f MiB)", r.Size, i, r.Raw[i], r.Manual[i], r.Ours[i], r.RSSMiB[i])
	}
	return r
}

// fill writes n values of 1 MiB (random, so nothing on the way can compress them) with four
// writers.
func fill(t *testing.T, cli *clientv3.Client, n int) {
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			rng := rand.NewChaCha8([32]byte{byte(w)})
			val := make([]byte, mib-64)
			for i := w; i < n; i += writers {
				_, _ = rng.Read(val)
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

// childEnv, when set, makes TestBackupChild take one backup: the endpoint, bucket and key
// separated by spaces.
const childEnv = "BENCH_BACKUP_CHILD"

// childResult is what the child process prints after resultPrefix.
type childResult struct {
	Seconds float64 `json:"seconds"`
	Size    int64   `json:"size"`
	PeakRSS uint64  `json:"peakRSS"`
}

const resultPrefix = "BENCH-RESULT "

// goMemLimit is the backup operator's GOMEMLIMIT in manifests/deploy/backup-operator.yaml.
const goMemLimit = "64MiB"

// ours takes one backup with snapshot.Take in a child process (this test binary again), so
// its peak RSS is the backup's alone.
func ours(t *testing.T, endpoint, key string) childResult {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBackupChild$", "-test.v")
	// GOMEMLIMIT as the backup operator's Deployment sets it (manifests/deploy): the child's
	// RSS is then the one the operator's backup stream would have.
	cmd.Env = append(os.Environ(), childEnv+"="+endpoint+" "+key, "GOMEMLIMIT="+goMemLimit)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("backup child: %v: %s", err, out)
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
	t.Fatalf("backup child printed no result: %s", out)
	return childResult{}
}

// TestBackupChild is the child process of ours.
func TestBackupChild(t *testing.T) {
	endpoint, key, ok := strings.Cut(os.Getenv(childEnv), " ")
	if !ok {
		t.Skip("only run as the bench's child process")
	}
	b, err := s3.New(t.Context(), s3Env(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runtime.GC()
	if err := benchutil.ResetPeak(benchutil.Self); err != nil {
		t.Fatal(err)
	}
	cfg := &snapshot.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
		Key: func(int64, time.Time) string { return key }}
	res, err := snapshot.Take(t.Context(), cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(childResult{Seconds: res.Duration.Seconds(), Size: res.Size, PeakRSS: benchutil.PeakRSS(benchutil.Self)})
	fmt.Println(resultPrefix + string(out))
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
		t.Cleanup(func() { emptyBucket(client, cfg.Bucket) })
	}
	return cfg
}

// emptyBucket deletes the bench's objects (several GiB at the largest size).
func emptyBucket(client *awss3.Client, bucket string) {
	ctx := context.Background()
	p := awss3.NewListObjectsV2Paginator(client, &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return
		}
		for _, o := range page.Contents {
			_, _ = client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		}
	}
}

// write prints the table to BENCH_BACKUP_OUT and its .json.
func write(t *testing.T, rows []row, runs int) {
	out := os.Getenv("BENCH_BACKUP_OUT")
	if out == "" {
		t.Log("BENCH_BACKUP_OUT not set: results not written")
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Backup bench: pkg/snapshot against etcdctl and the raw read\n\n")
	fmt.Fprintf(&b, "- Date: %s; %d cores, %s; %d runs per figure (min / median)\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), runs)
	fmt.Fprintf(&b, "- One etcd %s member and MinIO on loopback, the same for the three; values of 1 MiB of random bytes. "+
		"raw: the snapshot stream read and discarded. etcdctl: `etcdctl snapshot save` to a file, then the file uploaded with the AWS SDK upload manager (%d MiB parts x %d). "+
		"ours: `snapshot.Take` (stream, etcd's checksum verified, multipart upload at the same part size and concurrency) in a process of its own with GOMEMLIMIT=%s as the operator's Deployment sets it; peak RSS is that process's VmHWM.\n",
		snapshottest.Version, s3.DefaultPartSize>>20, s3.DefaultConcurrency, goMemLimit)
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
	if err := benchutil.WriteResults(out, b.String(), rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("results in %s:\n%s", out, b.String())
}
