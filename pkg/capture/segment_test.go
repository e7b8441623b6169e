package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

var testID = snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0x8e9e05c52164694d}

var t0 = time.Date(2026, 3, 29, 1, 30, 5, 123456789, time.UTC)

// testEvents returns the events of a revision rev made of n changes: PUTs with a previous value
// (one with a lease), and a DELETE when n > 2.
func testEvents(rev int64, n int) []*mvccpb.Event {
	evs := make([]*mvccpb.Event, n)
	for i := range evs {
		key := fmt.Appendf(nil, "/registry/k%d-%d", rev, i)
		kv := &mvccpb.KeyValue{Key: key, Value: bytes.Repeat([]byte{byte('a' + i)}, 10+i), CreateRevision: rev - 1,
			ModRevision: rev, Version: 2, Lease: int64(i % 2 * 7587)}
		prev := &mvccpb.KeyValue{Key: key, Value: []byte("old"), CreateRevision: rev - 1, ModRevision: rev - 1, Version: 1}
		evs[i] = &mvccpb.Event{Type: mvccpb.PUT, Kv: kv, PrevKv: prev}
		if i == 2 {
			evs[i] = &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: key, ModRevision: rev}, PrevKv: prev}
		}
	}
	return evs
}

// buildSegment builds a segment of id holding revs, the i-th with i%4+1 events, received one
// second apart from t0.
func buildSegment(t testing.TB, id snapshot.Identity, revs ...int64) Segment {
	t.Helper()
	b, err := NewBuilder(id)
	if err != nil {
		t.Fatal(err)
	}
	for i, rev := range revs {
		if err := b.Append(rev, t0.Add(time.Duration(i)*time.Second), testEvents(rev, i%4+1)); err != nil {
			t.Fatal(err)
		}
	}
	seg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return seg
}

// readAll reads a segment through a Reader.
func readAll(data []byte) (Header, []Record, error) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, err
	}
	var recs []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), recs, nil
		}
		if err != nil {
			return r.Header(), recs, err
		}
		recs = append(recs, rec)
	}
}

func eventBytes(t testing.TB, evs []*mvccpb.Event) [][]byte {
	t.Helper()
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		b, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestSegmentRoundTrip: a segment built record by record reads back with the same header,
// revisions and events (byte for byte in protobuf), and its trailer is the sha256 of the rest.
func TestSegmentRoundTrip(t *testing.T) {
	revs := []int64{100, 101, 102, 105, 1 << 40}
	seg := buildSegment(t, testID, revs...)
	want := Header{Version: 1, Identity: testID, FirstRevision: 100, LastRevision: 1 << 40,
		FirstTime: t0, LastTime: t0.Add(4 * time.Second), Revisions: 5, Events: 1 + 2 + 3 + 4 + 1}
	if !sameHeader(seg.Header, want) {
		t.Fatalf("Finish header = %+v, want %+v", seg.Header, want)
	}
	h, recs, err := readAll(seg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !sameHeader(h, want) || len(recs) != len(revs) {
		t.Fatalf("read header %+v and %d records, want %+v and %d", h, len(recs), want, len(revs))
	}
	for i, rec := range recs {
		if rec.Revision != revs[i] || !rec.Time.Equal(t0.Add(time.Duration(i)*time.Second)) || fmt.Sprint(eventBytes(t, rec.Events)) != fmt.Sprint(eventBytes(t, testEvents(revs[i], i%4+1))) {
			t.Fatalf("record %d: revision %d received %s, events %v", i, rec.Revision, rec.Time, rec.Events)
		}
	}
	body := seg.Data[:len(seg.Data)-TrailerSize]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], seg.Data[len(body):]) || seg.SHA256 != sha256.Sum256(seg.Data) {
		t.Fatal("trailer or SHA256 wrong")
	}
	if got := seg.Key("etcd.backup"); got != SegmentKey("etcd.backup", testID, 100, 1<<40, t0) {
		t.Fatalf("Key = %q", got)
	}
}

// TestBuilderIsReused: after Finish the builder starts a new segment that shares nothing with
// the finished one.
func TestBuilderIsReused(t *testing.T) {
	b, err := NewBuilder(testID)
	if err != nil {
		t.Fatal(err)
	}
	empty := b.Size()
	for _, rev := range []int64{7, 9} {
		if err := b.Append(rev, t0, testEvents(rev, 3)); err != nil {
			t.Fatal(err)
		}
		seg, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if h, recs, err := readAll(seg.Data); err != nil || h.FirstRevision != rev || len(recs) != 1 {
			t.Fatalf("segment %d: %+v, %d records, %v", rev, h, len(recs), err)
		}
		if b.Size() != empty || b.Revisions() != 0 {
			t.Fatalf("builder after Finish: size %d (empty %d), %d revisions", b.Size(), empty, b.Revisions())
		}
	}
	if _, err := b.Finish(); err == nil {
		t.Fatal("Finish of an empty segment succeeded")
	}
}

// TestBuilderRejects: the builder refuses what the reader would reject, and a refused record
// leaves the segment as it was.
func TestBuilderRejects(t *testing.T) {
	if _, err := NewBuilder(snapshot.Identity{Namespace: "Bad_NS", Cluster: "a"}); err == nil {
		t.Fatal("NewBuilder accepted an invalid identity")
	}
	b, _ := NewBuilder(testID)
	if err := b.Append(10, t0, testEvents(10, 2)); err != nil {
		t.Fatal(err)
	}
	size := b.Size()
	for name, tc := range map[string]struct {
		rev int64
		evs []*mvccpb.Event
	}{
		"same revision":  {10, testEvents(10, 1)},
		"lower revision": {9, testEvents(9, 1)},
		"no events":      {11, nil},
		"wrong revision": {11, testEvents(12, 1)},
		"nil kv":         {11, []*mvccpb.Event{{Type: mvccpb.PUT}}},
		"bad type":       {11, []*mvccpb.Event{{Type: 7, Kv: &mvccpb.KeyValue{ModRevision: 11}}}},
		"partly wrong":   {11, append(testEvents(11, 2), testEvents(12, 1)...)},
	} {
		if err := b.Append(tc.rev, t0, tc.evs); err == nil || b.Size() != size || b.Revisions() != 1 {
			t.Errorf("%s: Append = %v, size %d (was %d), %d revisions", name, err, b.Size(), size, b.Revisions())
		}
	}
}

// TestReaderDetectsCorruption: a flipped byte anywhere, a truncation at any length, a byte
// appended, each fails with ErrCorrupt, and no flip goes unnoticed.
func TestReaderDetectsCorruption(t *testing.T) {
	seg := buildSegment(t, testID, 5, 6, 7, 8)
	for i := range seg.Data {
		for _, mask := range []byte{0x01, 0x80} {
			in := bytes.Clone(seg.Data)
			in[i] ^= mask
			if _, _, err := readAll(in); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip of byte %d with %#x: err = %v, want ErrCorrupt", i, mask, err)
			}
		}
	}
	for n := range len(seg.Data) {
		if _, _, err := readAll(seg.Data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
	if _, _, err := readAll(append(bytes.Clone(seg.Data), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("appended byte: err = %v, want ErrCorrupt", err)
	}
}

// TestReaderErrors: specific damage gives specific messages, with a valid trailer (so it is
// the structure check, not the checksum, that finds it), and errors are sticky.
func TestReaderErrors(t *testing.T) {
	seg := buildSegment(t, testID, 5, 6, 7)
	for name, tc := range map[string]struct {
		edit func([]byte) []byte
		want string
	}{
		"bad magic": {func(b []byte) []byte { b[0] = 'X'; return b }, "bad magic"},
		"version":   {func(b []byte) []byte { b[preambleLen+1] = 2; return b }, "format version 2"},
		"repeat":    {func(b []byte) []byte { setRecordRev(b, 1, 5); return b }, "revision 5 repeated"},
		"backwards": {func(b []byte) []byte { setRecordRev(b, 2, 5); return b }, "out of order"},
		"beyond":    {func(b []byte) []byte { setRecordRev(b, 2, 8); return b }, "out of order"},
		"first":     {func(b []byte) []byte { setRecordRev(b, 0, 4); return b }, "first record at revision 4"},
		"first time": {func(b []byte) []byte {
			putInt64(b[preambleLen+offFirstTime:], t0.Add(-time.Nanosecond).UnixNano())
			return b
		}, "first record at revision 5 received"},
		"last time": {func(b []byte) []byte {
			putInt64(b[preambleLen+offLastTime:], t0.Add(time.Hour).UnixNano())
			return b
		}, "header says 7 with 6 (at 2026-03-29 02:30"},
		"events": {func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[preambleLen+offEvents:], 99)
			return b
		}, "header says 7 with 99"},
	} {
		in := rehash(tc.edit(bytes.Clone(seg.Data)))
		r, err := NewReader(bytes.NewReader(in))
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: err = %v, want ErrCorrupt saying %q", name, err, tc.want)
			continue
		}
		if r != nil {
			if _, again := r.Next(); !errors.Is(again, err) {
				t.Errorf("%s: error not sticky: %v then %v", name, err, again)
			}
		}
	}
}

// recordOffsets returns where each record of a valid segment starts.
func recordOffsets(data []byte) []int {
	at := preambleLen + int(binary.BigEndian.Uint32(data[len(Magic):]))
	var out []int
	for at < len(data)-TrailerSize {
		out = append(out, at)
		at += 4 + int(binary.BigEndian.Uint32(data[at:]))
	}
	return out
}

// setRecordRev sets the revision of record i and of its events' mod revisions (so that only
// the order is wrong).
func setRecordRev(data []byte, i int, rev int64) {
	at := recordOffsets(data)[i]
	n := int(binary.BigEndian.Uint32(data[at:]))
	rec, err := parseRecord(data[at+4 : at+4+n])
	if err != nil {
		panic(err)
	}
	var out []byte
	out = appendInt64(out, rev)
	out = appendInt64(out, rec.Time.UnixNano())
	out = binary.BigEndian.AppendUint32(out, u32(len(rec.Events)))
	for _, ev := range rec.Events {
		ev.Kv.ModRevision = rev
		b, _ := ev.Marshal()
		out = binary.BigEndian.AppendUint32(out, u32(len(b)))
		out = append(out, b...)
	}
	if len(out) != n {
		panic("record changed length")
	}
	copy(data[at+4:], out)
}

// rehash recomputes a segment's trailer.
func rehash(data []byte) []byte {
	sum := sha256.Sum256(data[:len(data)-TrailerSize])
	copy(data[len(data)-TrailerSize:], sum[:])
	return data
}

func sameHeader(a, b Header) bool {
	return a.Version == b.Version && a.Identity == b.Identity && a.FirstRevision == b.FirstRevision &&
		a.LastRevision == b.LastRevision && a.FirstTime.Equal(b.FirstTime) && a.LastTime.Equal(b.LastTime) &&
		a.Revisions == b.Revisions && a.Events == b.Events
}

// BenchmarkBuilderAppend: encoding throughput, for revisions of 2 events with previous values.
func BenchmarkBuilderAppend(b *testing.B) {
	bld, _ := NewBuilder(testID)
	evs := testEvents(2, 2)
	var finished int
	rev := int64(2)
	for b.Loop() {
		for _, ev := range evs {
			ev.Kv.ModRevision = rev
		}
		if err := bld.Append(rev, t0, evs); err != nil {
			b.Fatal(err)
		}
		rev++
		if bld.Size() >= DefaultSegmentMaxBytes {
			finished += bld.Size()
			if _, err := bld.Finish(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(bld.Size()+finished) / int64(b.N))
}

// BenchmarkReader: decoding and verifying a segment of DefaultSegmentMaxBytes.
func BenchmarkReader(b *testing.B) {
	bld, _ := NewBuilder(testID)
	for rev := int64(2); bld.Size() < DefaultSegmentMaxBytes; rev++ {
		if err := bld.Append(rev, t0, testEvents(rev, 2)); err != nil {
			b.Fatal(err)
		}
	}
	seg, _ := bld.Finish()
	b.SetBytes(int64(len(seg.Data)))
	for b.Loop() {
		if _, _, err := readAll(seg.Data); err != nil {
			b.Fatal(err)
		}
	}
}
