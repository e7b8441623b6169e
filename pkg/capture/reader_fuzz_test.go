package capture

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Modifications FuzzReader applies to a valid segment.
const (
	opNone     = iota // the valid segment itself
	opFlip            // xor one byte with a non-zero mask
	opTruncate        // cut it short
	opAppend          // bytes after the trailer
	opRaw             // the fuzzer's bytes after Magic: random segments
	opCount
)

// FuzzReader: a valid segment (built from spec) reads back as built; flipped, truncated or
// extended it fails with ErrCorrupt; random bytes never panic or allocate beyond the input,
// and when the reader accepts them they have a matching trailer and ordered records.
func FuzzReader(f *testing.F) {
	valid := buildSegment(f, testID, 5, 6, 7).Data
	f.Add([]byte{0, 1, 2}, uint8(opNone), uint32(0), byte(0), []byte(nil))
	f.Add([]byte{0xff, 0x40}, uint8(opFlip), uint32(30), byte(1), []byte(nil))
	f.Add([]byte{7}, uint8(opTruncate), uint32(100), byte(0), []byte(nil))
	f.Add([]byte{7}, uint8(opAppend), uint32(0), byte(9), []byte(nil))
	f.Add([]byte{}, uint8(opRaw), uint32(0), byte(0), valid[len(Magic):])
	f.Fuzz(func(t *testing.T, spec []byte, op uint8, pos uint32, mask byte, raw []byte) {
		spec = spec[:min(len(spec), 64)]
		if len(spec) == 0 {
			spec = []byte{0}
		}
		// Each spec byte is a revision: its step from the last (1-4) and its events (1-4).
		b, _ := NewBuilder(testID)
		var revs []int64
		rev := int64(1)
		for i, s := range spec {
			rev += int64(s&3) + 1
			revs = append(revs, rev)
			if err := b.Append(rev, t0.Add(time.Duration(i)*time.Millisecond), testEvents(rev, int(s>>6)+1)); err != nil {
				t.Fatal(err)
			}
		}
		seg, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		in := seg.Data
		switch op % opCount {
		case opFlip:
			in = bytes.Clone(in)
			in[int(pos)%len(in)] ^= max(mask, 1)
		case opTruncate:
			in = in[:int(pos)%len(in)]
		case opAppend:
			in = append(bytes.Clone(in), mask)
		case opRaw:
			in = append([]byte(Magic), raw...)
		}
		h, recs, err := readAll(in)
		switch {
		case op%opCount == opNone && err != nil:
			t.Fatalf("valid segment rejected: %v", err)
		case op%opCount == opNone && (len(recs) != len(revs) || h.Revisions != int64(len(revs))):
			t.Fatalf("valid segment: %d records, header %+v; built %d", len(recs), h, len(revs))
		case op%opCount != opNone && op%opCount != opRaw && err == nil:
			t.Fatalf("modified segment (op %d) accepted", op%opCount)
		case err != nil && !errors.Is(err, ErrCorrupt):
			t.Fatalf("err = %v, want ErrCorrupt", err)
		case err == nil:
			checkAccepted(t, in, h, recs)
		}
		if op%opCount == opNone {
			for i, r := range recs {
				if r.Revision != revs[i] || fmt.Sprint(eventBytes(t, r.Events)) != fmt.Sprint(eventBytes(t, testEvents(revs[i], int(spec[i]>>6)+1))) {
					t.Fatalf("record %d differs from what was built", i)
				}
			}
		}
	})
}

// checkAccepted checks what the reader promises of a segment it accepted.
func checkAccepted(t *testing.T, in []byte, h Header, recs []Record) {
	t.Helper()
	sum := sha256.Sum256(in[:len(in)-TrailerSize])
	if !bytes.Equal(sum[:], in[len(in)-TrailerSize:]) {
		t.Fatal("accepted a segment whose trailer does not match")
	}
	var events int64
	for i, r := range recs {
		if (i == 0 && r.Revision != h.FirstRevision) || (i > 0 && r.Revision <= recs[i-1].Revision) || r.Revision > h.LastRevision {
			t.Fatalf("accepted record %d at revision %d out of order (header %+v)", i, r.Revision, h)
		}
		for _, ev := range r.Events {
			if ev.Kv == nil || ev.Kv.ModRevision != r.Revision {
				t.Fatalf("accepted an event of another revision in record %d", i)
			}
		}
		events += int64(len(r.Events))
	}
	if int64(len(recs)) != h.Revisions || events != h.Events || recs[len(recs)-1].Revision != h.LastRevision {
		t.Fatalf("accepted %d records with %d events; header %+v", len(recs), events, h)
	}
}
