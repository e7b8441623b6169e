//go:build bench

package capture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// loadKeys is how many keys the paced load overwrites in turn.
const loadKeys = 1000

// Modes of an overhead run.
const (
	modeWithout = "without capture"
	modeWith    = "with capture"
	modeWatch   = "watch only"
)

// modes are the overhead modes, in the order of the even rounds (odd rounds reverse it).
var modes = []string{modeWithout, modeWatch, modeWith}

// overheadRun is one run of the paced write load.
type overheadRun struct {
	Mode       string  `json:"mode"`
	Round      int     `json:"round"`
	IntervalMs int64   `json:"segmentIntervalMs,omitempty"`
	Baseline   bool    `json:"inRatio"` // counted in the with/without ratio
	Ops        int     `json:"ops"`
	Seconds    float64 `json:"seconds"`
	P50Ms      float64 `json:"p50Ms"`
	P99Ms      float64 `json:"p99Ms"`
	MaxMs      float64 `json:"maxMs"`
	lat        []time.Duration
}

// captureStats is what one capture child measured.
type captureStats struct {
	Label      string  `json:"label"`
	IntervalMs int64   `json:"segmentIntervalMs"`
	Revisions  int     `json:"revisions"`
	Segments   int64   `json:"segments"`
	MiB        float64 `json:"uploadedMiB"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// LagP50Ms, LagP99Ms and LagMaxMs: over the captured revisions, from when the capturer
	// received each to when the segment holding it was stored.
	LagP50Ms float64 `json:"lagP50Ms"`
	LagP99Ms float64 `json:"lagP99Ms"`
	LagMaxMs float64 `json:"lagMaxMs"`
	// SampledLagMaxMs is the highest Progress.Lag the child sampled (every 10 ms).
	SampledLagMaxMs float64 `json:"sampledLagMaxMs"`
	// CPUSeconds is the child's CPU time, WallSeconds its life.
	CPUSeconds  float64 `json:"cpuSeconds"`
	WallSeconds float64 `json:"wallSeconds"`
}

// benchOverhead runs the paced load on one member in rounds of runs without capture, with only
// the capture's watch and with a capture (ABC CBA order, so a drift over the runs weighs on
// every mode alike), then once with a capture of 1 s segments.
func benchOverhead(t *testing.T, store s3.Config, s settings, res *results) {
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	id := identity(t, cli, e.Endpoint)
	clients := make([]*clientv3.Client, s.Clients)
	for i := range clients {
		clients[i] = e.Client(t)
	}
	b, err := s3.New(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	value := make([]byte, s.ValueBytes)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(value)
	pace := time.Second / time.Duration(s.Rate)
	timeout := 3*time.Duration(s.Ops)*pace + time.Minute
	load := func(n int) ([]time.Duration, time.Duration) {
		lat, took, err := runLoad(t.Context(), clients, n, pace, timeout, putOp(string(value), loadKeys))
		if err != nil {
			t.Fatal(err)
		}
		return lat, took
	}
	load(s.Ops / 4) // warm up: the keys exist and the connections are open

	run := func(round int, mode string, interval time.Duration, inRatio bool, prefix string) {
		r := overheadRun{Mode: mode, Round: round, Baseline: inRatio, Ops: s.Ops}
		var ch *child
		var start int64
		if mode != modeWithout {
			if mode == modeWith {
				r.IntervalMs = interval.Milliseconds()
			}
			start = mark(t, cli)
			ch = startChild(t, childSpec{Endpoint: e.Endpoint, Prefix: prefix, Identity: id, Start: start, IntervalMs: interval.Milliseconds(), WatchOnly: mode == modeWatch})
		}
		lat, took := load(s.Ops)
		r.lat, r.Seconds = lat, took.Seconds()
		r.P50Ms, r.P99Ms, r.MaxMs = ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), ms(lat[len(lat)-1])
		if mode == modeWatch {
			ch.stop(t, revision(t, cli))
			t.Logf("%s: p50 %.2f ms, p99 %.2f ms", mode, r.P50Ms, r.P99Ms)
		} else if ch != nil {
			end := revision(t, cli)
			cs := stats(t, b, prefix, id, start, end, ch.stop(t, end))
			cs.Label, cs.IntervalMs = fmt.Sprintf("paced load, %d puts/s", s.Rate), r.IntervalMs
			res.Captures = append(res.Captures, cs)
			t.Logf("%s (%s segments): p50 %.2f ms, p99 %.2f ms; capture RSS %.0f MiB, lag p50 %.0f ms p99 %.0f ms",
				mode, interval, r.P50Ms, r.P99Ms, cs.PeakRSSMiB, cs.LagP50Ms, cs.LagP99Ms)
		} else {
			t.Logf("%s: p50 %.2f ms, p99 %.2f ms", mode, r.P50Ms, r.P99Ms)
		}
		res.Overhead = append(res.Overhead, r)
	}
	interval := time.Duration(s.Intervals[0]) * time.Millisecond
	for i := range s.Rounds {
		order := slices.Clone(modes)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, m := range order {
			run(i, m, interval, true, fmt.Sprintf("overhead/%d/etcd.backup", i))
		}
	}
	for _, iv := range s.Intervals[1:] {
		run(s.Rounds, modeWith, time.Duration(iv)*time.Millisecond, false, fmt.Sprintf("overhead/%dms/etcd.backup", iv))
	}
}

// identity is the member's cluster identity as the backup operator names it.
func identity(t *testing.T, cli *clientv3.Client, endpoint string) snapshot.Identity {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot.Identity{Namespace: "bench", Cluster: "main", ClusterID: st.Header.ClusterId}
}

// stats reads the segments a child stored for revisions start to end and times each revision's
// upload: the first upload the child saw that covers it, less the time the capturer received it.
func stats(t *testing.T, b backend.Backend, prefix string, id snapshot.Identity, start, end int64, r childResult) captureStats {
	t.Helper()
	cs := captureStats{Segments: r.Progress.Segments, MiB: float64(r.Progress.UploadedBytes) / mib,
		PeakRSSMiB: float64(r.PeakRSS) / mib, SampledLagMaxMs: ms(r.MaxLag), CPUSeconds: r.CPU.Seconds(), WallSeconds: r.Wall.Seconds()}
	segs, err := capture.ListSegments(t.Context(), b, prefix, id)
	if err != nil {
		t.Fatal(err)
	}
	var lags []time.Duration
	for _, o := range segs {
		_, err := capture.ReadSegment(t.Context(), b, o, func(rec capture.Record) error {
			if rec.Revision < start || rec.Revision > end {
				return nil
			}
			k := sort.Search(len(r.Uploads), func(i int) bool { return r.Uploads[i].Revision >= rec.Revision })
			if k == len(r.Uploads) {
				return fmt.Errorf("revision %d stored but no upload seen for it", rec.Revision)
			}
			lags = append(lags, time.Duration(r.Uploads[k].At-rec.Time.UnixNano()))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(lags) == 0 {
		t.Fatalf("no revision %d-%d in the segments under %s", start, end, prefix)
	}
	slices.Sort(lags)
	cs.Revisions = len(lags)
	cs.LagP50Ms, cs.LagP99Ms, cs.LagMaxMs = ms(percentile(lags, 0.5)), ms(percentile(lags, 0.99)), ms(lags[len(lags)-1])
	return cs
}
