package codec

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
)

// memoryTestSize is how much data TestBoundedMemory pushes through each format, and
// maxHeapGrowth how far above its baseline the heap may grow meanwhile.
const (
	memoryTestSize = 256 << 20
	maxHeapGrowth  = 64 << 20
)

// heapSampler samples HeapInuse until stopped and keeps the peak.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			s.peak = max(s.peak, ms.HeapInuse)
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop stops sampling and returns the peak HeapInuse seen.
func (s *heapSampler) Stop() uint64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// heapInuse returns HeapInuse after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestBoundedMemory encodes and decodes 256 MiB of compressible data in every format, writer
// and reader connected by a pipe so that nothing holds the object, and checks that the peak
// heap (HeapInuse, sampled every 2 ms) stays within 64 MiB of what it was before. GOGC is
// lowered for the test so that the peak measures what the codec holds, not garbage the
// collector has not got round to. It logs the end-to-end throughput of each format.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 1 GiB through the codec")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	ids := mustIdentities(t, testKeyFile)
	for _, f := range allFormats {
		t.Run(f.String(), func(t *testing.T) {
			base := heapInuse()
			sampler := startHeapSampler()
			start := time.Now()
			in, out, stored, err := pipeThrough(newMixedReader(memoryTestSize, 9, false), optionsFor(t, f), ids)
			elapsed := time.Since(start)
			peak := sampler.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, out) {
				t.Fatalf("sha256 in %x, out %x", in, out)
			}
			growth := int64(peak) - int64(base) //nolint:gosec // heap sizes are far below 2^63
			t.Logf("%-8s %d MiB (stored %d MiB) in %v: %.0f MB/s encode+decode pipelined; heap %d MiB before, peak %+.1f MiB",
				f, memoryTestSize>>20, stored>>20, elapsed.Round(time.Millisecond),
				float64(memoryTestSize)/elapsed.Seconds()/1e6, base>>20, float64(growth)/(1<<20))
			if growth > maxHeapGrowth {
				t.Errorf("heap grew by %d MiB, more than %d MiB", growth>>20, maxHeapGrowth>>20)
			}
		})
	}
}

// pipeThrough encodes src into a pipe on one goroutine and decodes it on another, and returns
// the sha256 of the input and of the output and the stored size.
func pipeThrough(src io.Reader, o Options, ids []age.Identity) (in, out []byte, stored int64, err error) {
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var werr error
	inHash := sha256.New()
	wg.Go(func() {
		w, err := NewWriter(&countingWriter{w: pw, n: &stored}, o)
		if err != nil {
			werr = err
			pw.CloseWithError(err)
			return
		}
		buf := make([]byte, 256<<10)
		if _, err := io.CopyBuffer(w, io.TeeReader(src, inHash), buf); err != nil {
			werr = err
		} else {
			werr = w.Close()
		}
		pw.CloseWithError(werr)
	})
	r, _, err := NewReader(pr, ids)
	if err != nil {
		pr.CloseWithError(err)
		wg.Wait()
		return nil, nil, 0, err
	}
	out, _, err = hashingRead(r)
	r.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	wg.Wait()
	if err == nil {
		err = werr
	}
	return inHash.Sum(nil), out, stored, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}
