package main

import (
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
)

// stream is a generated, incompressible stream of n bytes. It repeats a 1 MiB pseudo-random
// block, so it costs 1 MiB of memory whatever n is; none of the servers deduplicates.
type stream struct {
	block []byte
	n     int64
	off   int64
}

func newStream(block []byte, n int64) *stream { return &stream{block: block, n: n} }

// Read implements io.Reader only: no Seek, ReaderAt or WriteTo, as a snapshot stream.
func (s *stream) Read(p []byte) (int, error) {
	if s.off >= s.n {
		return 0, io.EOF
	}
	if rem := s.n - s.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	n := 0
	for n < len(p) {
		i := int((s.off + int64(n)) % int64(len(s.block)))
		n += copy(p[n:], s.block[i:])
	}
	s.off += int64(n)
	return n, nil
}

// memPeak samples the Go heap every millisecond while an upload runs.
type memPeak struct {
	stop chan struct{}
	wg   sync.WaitGroup

	// heap is the peak of allocated heap objects, live or not yet collected (MemStats.HeapAlloc).
	heap uint64
	// live is the peak live heap as measured by the GC (what survives a collection).
	live uint64
}

var sampleNames = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes"}

// startMemPeak collects garbage, resets the kernel's peak-RSS counter and starts sampling.
func startMemPeak() *memPeak {
	runtime.GC()
	debug.FreeOSMemory()
	_ = benchutil.ResetPeak(benchutil.Self) // best effort: the peak then covers more
	m := &memPeak{stop: make(chan struct{})}
	m.wg.Add(1)
	go m.run()
	return m
}

func (m *memPeak) run() {
	defer m.wg.Done()
	samples := make([]metrics.Sample, len(sampleNames))
	for i, n := range sampleNames {
		samples[i].Name = n
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(samples)
		m.heap = max(m.heap, samples[0].Value.Uint64())
		m.live = max(m.live, samples[1].Value.Uint64())
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

// finish stops sampling and returns the peaks, with the process's peak RSS since start.
func (m *memPeak) finish() (heap, live, rss uint64) {
	close(m.stop)
	m.wg.Wait()
	return m.heap, m.live, benchutil.PeakRSS(benchutil.Self)
}
