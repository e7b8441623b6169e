//go:build bench

package capture

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// write prints the results to BENCH_CAPTURE_OUT and its .json.
func write(t *testing.T, res *results) {
	out := os.Getenv("BENCH_CAPTURE_OUT")
	if out == "" {
		t.Log("BENCH_CAPTURE_OUT not set: results not written")
		return
	}
	s := res.Settings
	var b strings.Builder
	fmt.Fprintf(&b, "# Continuous capture bench: pkg/capture against the same etcd without it\n\n")
	fmt.Fprintf(&b, "- Date: %s; commit %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), commit())
	fmt.Fprintf(&b, "- Machine: %s; %s. One etcd %s member, MinIO and the capturer share it, all on loopback.\n", machine(), runtime.Version(), snapshottest.Version)
	fmt.Fprintf(&b, "- The capturer (`capture.Capturer`, default 8 MiB segments and 64 MiB buffer) runs in a process of its own (this test binary again) with GOMEMLIMIT=%s as the backup operator's Deployment sets it; its peak RSS is that process's VmHWM.\n", goMemLimit)
	fmt.Fprintf(&b, "- Settings: BENCH_CAPTURE_OPS=%d BENCH_CAPTURE_CLIENTS=%d BENCH_CAPTURE_RATE=%d BENCH_CAPTURE_VALUE_BYTES=%d BENCH_CAPTURE_ROUNDS=%d BENCH_CAPTURE_SIZE=%s BENCH_CAPTURE_CHANGES=%d BENCH_RUNS=%d (hack/bench.sh; the machine is shared, so absolute figures are noisy).\n",
		s.Ops, s.Clients, s.Rate, s.ValueBytes, s.Rounds, sizeList(s.Sizes), s.Changes, s.Runs)
	fmt.Fprintf(&b, "- Targets (issue 29): write p99 with capture <= %.1fx without; capturer peak RSS < %d MiB; upload lag p99 < segment interval + %s; point-in-time restore <= %.0fx the full restore.\n\n",
		targetP99Ratio, targetRSSMiB, targetLagSlack, targetRestoreRatio)
	writeOverhead(&b, res)
	writeCaptures(&b, res)
	if len(res.Restore) > 0 {
		writeRestore(&b, s, res.Restore)
	}
	if err := benchutil.WriteResults(out, b.String(), res); err != nil {
		t.Fatal(err)
	}
	t.Logf("results in %s:\n%s", out, b.String())
}

// pooled are the p50 and p99 of all puts of the runs counted in the ratio, per mode.
func pooled(res *results) (p50, p99 map[string]time.Duration) {
	lat := map[string][]time.Duration{}
	for _, r := range res.Overhead {
		if r.Baseline {
			lat[r.Mode] = append(lat[r.Mode], r.lat...)
		}
	}
	p50, p99 = map[string]time.Duration{}, map[string]time.Duration{}
	for m, l := range lat {
		slices.Sort(l)
		p50[m], p99[m] = percentile(l, 0.5), percentile(l, 0.99)
	}
	return p50, p99
}

func writeOverhead(b *strings.Builder, res *results) {
	s := res.Settings
	fmt.Fprintf(b, "## 1. Write latency with and without capture\n\n")
	fmt.Fprintf(b, "Each run: %d puts of %d-byte values over %d keys from %d writers (a client each), paced at %d puts/s together (latency from the moment a put is sent). "+
		"Three modes in %d rounds after a warm-up, in ABC CBA order: without capture; watch only (a child process watches as the capturer does, whole keyspace with previous values, and throws the events away: what the watch costs etcd); "+
		"with capture (a capturer child watches the member and stores segments in MinIO while the load runs).\n\n",
		s.Ops, s.ValueBytes, loadKeys, s.Clients, s.Rate, s.Rounds)
	fmt.Fprintf(b, "| run | round | mode | segment interval | s | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|---|\n")
	without := map[int]float64{}
	for i, r := range res.Overhead {
		iv := "-"
		if r.IntervalMs > 0 {
			iv = (time.Duration(r.IntervalMs) * time.Millisecond).String()
		}
		note := ""
		if !r.Baseline {
			note = " (not in the ratio)"
		}
		if r.Mode == modeWithout {
			without[r.Round] = r.P99Ms
		}
		fmt.Fprintf(b, "| %d | %d | %s%s | %s | %.1f | %.2f | %.2f | %.1f |\n", i+1, r.Round+1, r.Mode, note, iv, r.Seconds, r.P50Ms, r.P99Ms, r.MaxMs)
	}
	ratios := map[string][]string{}
	for _, r := range res.Overhead {
		if r.Baseline && r.Mode != modeWithout && without[r.Round] > 0 {
			ratios[r.Mode] = append(ratios[r.Mode], fmt.Sprintf("%.2fx", r.P99Ms/without[r.Round]))
		}
	}
	p50, p99 := pooled(res)
	r50 := func(m string) float64 { return float64(p50[m]) / float64(p50[modeWithout]) }
	r99 := func(m string) float64 { return float64(p99[m]) / float64(p99[modeWithout]) }
	verdict := "target met"
	if r99(modeWith) > targetP99Ratio {
		verdict = fmt.Sprintf("**target missed: p99 with capture is %.0f %% above without (target %.0f %%)**", (r99(modeWith)-1)*100, (targetP99Ratio-1)*100)
	}
	fmt.Fprintf(b, "\nAll puts of the counted runs pooled per mode, and the ratio to without capture (p99 round by round in brackets):\n\n")
	fmt.Fprintf(b, "| mode | p50 ms | p50 ratio | p99 ms | p99 ratio |\n|---|---|---|---|---|\n")
	for _, m := range modes {
		rounds := ""
		if m != modeWithout {
			rounds = " (" + strings.Join(ratios[m], ", ") + ")"
		}
		fmt.Fprintf(b, "| %s | %.2f | %.2fx | %.2f | **%.2fx**%s |\n", m, ms(p50[m]), r50(m), ms(p99[m]), r99(m), rounds)
	}
	fmt.Fprintf(b, "\nWith capture against without: %s.\n\n", verdict)
}

func writeCaptures(b *strings.Builder, res *results) {
	fmt.Fprintf(b, "## 2, 3. The capturer: peak RSS and upload lag\n\n")
	fmt.Fprintf(b, "Lag: for every captured revision, from when the capturer received it to when the child saw the segment holding it stored (Progress polled every %s). "+
		"Sampled max: the highest `Progress.Lag` polled. CPU: the capturer process's user + system time over its life (start to the last segment stored), and that as a share of one core.\n\n", pollEvery)
	fmt.Fprintf(b, "| capture | segment interval | revisions | segments | uploaded | peak RSS | lag p50 | lag p99 | lag max | sampled max | CPU | targets met |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range res.Captures {
		iv := time.Duration(c.IntervalMs) * time.Millisecond
		met := []string{}
		for _, x := range []struct {
			ok   bool
			name string
		}{{c.PeakRSSMiB < targetRSSMiB, "RSS"}, {c.LagP99Ms < ms(iv+targetLagSlack), "lag"}} {
			if x.ok {
				met = append(met, x.name)
			} else {
				met = append(met, "**not "+x.name+"**")
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.1f MiB | %.0f MiB | %.2f s | %.2f s | %.2f s | %.2f s | %.1f s (%.0f %%) | %s |\n",
			c.Label, iv, c.Revisions, c.Segments, c.MiB, c.PeakRSSMiB, c.LagP50Ms/1000, c.LagP99Ms/1000, c.LagMaxMs/1000, c.SampledLagMaxMs/1000,
			c.CPUSeconds, 100*c.CPUSeconds/c.WallSeconds, strings.Join(met, ", "))
	}
	fmt.Fprintln(b)
}

func writeRestore(b *strings.Builder, s settings, rs []*restoreResult) {
	fmt.Fprintf(b, "## 4. Restore to a point against a full restore\n\n")
	fmt.Fprintf(b, "A member filled with keys of %d random bytes (transactions of %d puts) up to the size, backed up into MinIO; then %d changes (of every 20: one deletes a backed-up key, one creates a key, the rest overwrite a random key with %d bytes) from %d writers, captured by a child at the default interval. "+
		"Restores as the restore agent makes them, alternated, %d of each: **full**: the backup downloaded and checked (`restoreseed.Fetch`), then `etcdutl snapshot restore --skip-hash-check`; "+
		"**point in time**: the same download, etcd's trailer cut off, `capture.Replay` to the newest captured revision (the segments read from MinIO), then the same etcdutl. "+
		"The first replay's data is checked against the member's HashKV at that revision. Medians of the runs, in seconds (download + replay + etcdutl).\n\n",
		s.ValueBytes, fillTxnOps, s.Changes, s.ValueBytes, s.Clients, s.Runs)
	fmt.Fprintf(b, "| keyspace | keys | backup | replayed | full | point in time | point / full | without the download | target met | HashKV checked |\n|---|---|---|---|---|---|---|---|---|---|\n")
	md := benchutil.Median
	for _, r := range rs {
		full, point := md(sum(r.FullFetch, r.FullEtcdutl)), md(sum(r.PointFetch, r.PointReplay, r.PointEtcdutl))
		ratio, local := point/full, md(sum(r.PointReplay, r.PointEtcdutl))/md(r.FullEtcdutl)
		met := "yes"
		if ratio > targetRestoreRatio {
			met = "**no**"
		}
		fmt.Fprintf(b, "| %s | %d | %.0f MiB | %d revisions, %d segments, %.0f MiB | %.1f + %.1f = **%.1f** | %.1f + %.1f + %.1f = **%.1f** | **%.2fx** | %.2fx | %s | %v |\n",
			r.Size, r.Keys, r.SnapshotMiB, r.Revisions, r.Segments, r.SegmentMiB, md(r.FullFetch), md(r.FullEtcdutl), full,
			md(r.PointFetch), md(r.PointReplay), md(r.PointEtcdutl), point, ratio, local, met, r.Verified)
	}
	fmt.Fprintln(b)
}

func sizeList(sizes []int64) string {
	var out []string
	for _, n := range sizes {
		out = append(out, strings.ReplaceAll(benchutil.SizeName(n), " ", ""))
	}
	return strings.Join(out, ",")
}

// sum adds the runs' figures of several steps, run by run.
func sum(steps ...[]float64) []float64 {
	out := make([]float64, len(steps[0]))
	for _, s := range steps {
		for i, x := range s {
			out[i] += x
		}
	}
	return out
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// machine describes the cores, the CPU, the memory and the kernel.
func machine() string {
	cpu, mem := "unknown CPU", ""
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(raw), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(raw))
	}
	return fmt.Sprintf("%d cores (%s)%s%s", runtime.NumCPU(), cpu, mem, kernel)
}

// createBucket creates the bench's bucket (it may exist from an earlier run) and empties it when
// the test ends.
func createBucket(t *testing.T, cfg s3.Config) {
	client := awss3.New(awss3.Options{Region: cfg.Region, BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, "")})
	_, _ = client.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)})
	benchutil.EmptyBucket(client, cfg.Bucket) // a run stopped before its cleanup left its objects
	t.Cleanup(func() { benchutil.EmptyBucket(client, cfg.Bucket) })
}
