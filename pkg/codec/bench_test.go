package codec

import (
	"bytes"
	"io"
	"sync"
	"testing"
)

// benchSize is the size of the compressible input the benchmarks encode and decode.
const benchSize = 256 << 20

var benchData = sync.OnceValue(func() []byte { return mixedData(benchSize, 10, false) })

// BenchmarkEncode measures NewWriter alone per format on 256 MiB of compressible data
// (etcd-like key/value records), written in 1 MiB writes into io.Discard:
//
//	go test -run '^$' -bench . -benchtime 3x ./pkg/codec/
func BenchmarkEncode(b *testing.B) {
	data := benchData()
	for _, f := range allFormats {
		b.Run(f.String(), func(b *testing.B) {
			o := optionsFor(b, f)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				w, err := NewWriter(io.Discard, o)
				if err != nil {
					b.Fatal(err)
				}
				for rest := data; len(rest) > 0; rest = rest[min(len(rest), 1<<20):] {
					if _, err := w.Write(rest[:min(len(rest), 1<<20)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode measures NewReader alone per format on the same data, read in 1 MiB reads
// (the throughput is that of the plaintext).
func BenchmarkDecode(b *testing.B) {
	data := benchData()
	ids := mustIdentities(b, testKeyFile)
	for _, f := range allFormats {
		b.Run(f.String(), func(b *testing.B) {
			obj := encode(b, data, optionsFor(b, f))
			buf := make([]byte, 1<<20)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r, _, err := NewReader(bytes.NewReader(obj), ids)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
				if err != nil || n != int64(len(data)) {
					b.Fatalf("%d bytes, %v", n, err)
				}
				r.Close()
			}
		})
	}
}
