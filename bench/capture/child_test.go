//go:build bench

package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// childEnv, when set, makes TestCaptureChild run one capture: childSpec in JSON.
const childEnv = "BENCH_CAPTURE_CHILD"

// goMemLimit is the backup operator's GOMEMLIMIT in manifests/deploy/backup-operator.yaml.
const goMemLimit = "64MiB"

// What the child prints: readyLine once it received its start revision, then resultPrefix and
// a childResult.
const (
	readyLine    = "BENCH-READY"
	resultPrefix = "BENCH-RESULT "
)

// pollEvery is how often the child reads the Capturer's Progress: an upload is timed to within it.
const pollEvery = 10 * time.Millisecond

// childWait bounds how long the child waits for its last revision to be stored.
const childWait = 5 * time.Minute

// childSpec is the capture a child runs.
type childSpec struct {
	Endpoint   string            `json:"endpoint"`
	Prefix     string            `json:"prefix"`
	Identity   snapshot.Identity `json:"identity"`
	Start      int64             `json:"start"`
	IntervalMs int64             `json:"intervalMs"`
	// WatchOnly: no Capturer, only its watch (whole keyspace from Start, previous values),
	// the events thrown away: what the watch alone costs etcd.
	WatchOnly bool `json:"watchOnly,omitempty"`
}

// upload is one observed advance of the stored revision: every revision up to Revision was
// stored by At (Unix nanoseconds).
type upload struct {
	Revision int64 `json:"revision"`
	At       int64 `json:"at"`
}

// childResult is what the child prints after resultPrefix.
type childResult struct {
	PeakRSS  uint64           `json:"peakRSS"`
	Progress capture.Progress `json:"progress"`
	MaxLag   time.Duration    `json:"maxLag"` // the highest Progress.Lag sampled
	Uploads  []upload         `json:"uploads"`
	Err      string           `json:"err,omitempty"`
	// CPU is the child's user and system CPU time over its life, Wall that life (set by the
	// parent).
	CPU, Wall time.Duration `json:"-"`
}

// child is a running capture child process.
type child struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	stderr  strings.Builder
	started time.Time
}

// startChild starts a capture child and waits until it received spec.Start (the caller wrote
// that revision before).
func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	raw, _ := json.Marshal(spec)
	c := &child{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCaptureChild$", "-test.v"), lines: make(chan string, 16)}
	// GOMEMLIMIT as the backup operator's Deployment sets it (manifests/deploy).
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(raw), "GOMEMLIMIT="+goMemLimit)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.started = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64*mib)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	if _, err := c.next(t, 30*time.Second, readyLine); err != nil {
		t.Fatalf("capture child not ready: %v\n%s", err, c.stderr.String())
	}
	return c
}

// next waits for a line starting with prefix and returns the rest.
func (c *child) next(t *testing.T, timeout time.Duration, prefix string) (string, error) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return "", errors.New("the child exited")
			}
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest, nil
			}
		case <-deadline:
			return "", fmt.Errorf("no %q within %s", prefix, timeout)
		}
	}
}

// stop tells the child the last revision to store and returns its result once it stored it.
func (c *child) stop(t *testing.T, last int64) childResult {
	t.Helper()
	if _, err := fmt.Fprintln(c.stdin, last); err != nil {
		t.Fatal(err)
	}
	rest, err := c.next(t, childWait+time.Minute, resultPrefix)
	_ = c.stdin.Close()
	if werr := c.cmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		t.Fatalf("capture child: %v\n%s", err, c.stderr.String())
	}
	var res childResult
	if err := json.Unmarshal([]byte(rest), &res); err != nil {
		t.Fatal(err)
	}
	if res.Err != "" {
		t.Fatalf("capture child: %s", res.Err)
	}
	res.CPU, res.Wall = c.cmd.ProcessState.UserTime()+c.cmd.ProcessState.SystemTime(), time.Since(c.started)
	return res
}

// TestCaptureChild is the child process: it runs a Capturer until the revision its parent
// writes to stdin is stored, timing each upload, and prints its peak RSS.
func TestCaptureChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("only run as the bench's child process")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(t.Context(), s3Env(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{spec.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	runtime.GC()
	if err := benchutil.ResetPeak(benchutil.Self); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runErr := make(chan error, 1)
	var progress func() capture.Progress
	if spec.WatchOnly {
		progress = watchOnly(ctx, cli, spec.Start, runErr)
	} else {
		cp, err := capture.New(capture.Config{Client: cli, Backend: b, Prefix: spec.Prefix, Identity: spec.Identity,
			StartRevision: spec.Start, SegmentInterval: time.Duration(spec.IntervalMs) * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		go func() { runErr <- cp.Run(ctx) }()
		progress = cp.Progress
	}
	last := make(chan int64, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			n = -1 // the parent went away: stop
		}
		last <- n
	}()
	res := follow(progress, spec.Start, last, runErr)
	cancel()
	if err := <-runErr; res.Err == "" && !errors.Is(err, context.Canceled) {
		res.Err = fmt.Sprintf("Run: %v", err)
	}
	res.PeakRSS = benchutil.PeakRSS(benchutil.Self)
	res.Progress = progress()
	out, _ := json.Marshal(res)
	fmt.Println(resultPrefix + string(out))
}

// watchOnly watches as a Capturer does and throws the events away; its progress has the last
// revision received as appended and stored.
func watchOnly(ctx context.Context, cli *clientv3.Client, start int64, runErr chan<- error) func() capture.Progress {
	var rev atomic.Int64
	rev.Store(start - 1)
	wch := cli.Watch(clientv3.WithRequireLeader(ctx), "", clientv3.WithPrefix(), clientv3.WithRev(start), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	go func() {
		for resp := range wch {
			if err := resp.Err(); err != nil {
				runErr <- err
				return
			}
			if n := len(resp.Events); n > 0 {
				rev.Store(resp.Events[n-1].Kv.ModRevision)
			}
		}
		runErr <- ctx.Err()
	}()
	return func() capture.Progress {
		r := rev.Load()
		return capture.Progress{AppendedRevision: r, UploadedRevision: r}
	}
}

// follow samples the progress until the revision received on last is stored, Run fails, or
// childWait passes after last.
func follow(progress func() capture.Progress, start int64, last <-chan int64, runErr chan error) childResult {
	var res childResult
	ready, want := false, int64(-1)
	var deadline <-chan time.Time
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	stored := start - 1
	for {
		select {
		case err := <-runErr:
			runErr <- err
			res.Err = fmt.Sprintf("Run: %v", err)
			return res
		case want = <-last:
			if want < 0 {
				res.Err = "no last revision from the parent"
				return res
			}
			deadline = time.After(childWait)
		case <-deadline:
			res.Err = fmt.Sprintf("revision %d not stored within %s (stored %d)", want, childWait, stored)
			return res
		case now := <-tick.C:
			p := progress()
			res.MaxLag = max(res.MaxLag, p.Lag)
			if !ready && p.AppendedRevision >= start {
				ready = true
				fmt.Println(readyLine)
			}
			if p.UploadedRevision > stored {
				stored = p.UploadedRevision
				res.Uploads = append(res.Uploads, upload{Revision: stored, At: now.UnixNano()})
			}
			if want >= 0 && stored >= want {
				return res
			}
		}
	}
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
	cfg := s3.Config{Bucket: "bench-capture", Region: os.Getenv("OBJSTORE_S3_REGION"), Endpoint: endpoint, ForcePathStyle: true,
		Credentials: &s3.Credentials{AccessKeyID: os.Getenv("OBJSTORE_S3_ACCESS_KEY"), SecretAccessKey: os.Getenv("OBJSTORE_S3_SECRET_KEY")}}
	if os.Getenv(childEnv) == "" {
		createBucket(t, cfg)
	}
	return cfg
}
