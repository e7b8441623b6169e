package capture

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Magic opens every segment object.
const Magic = "ETCDSEG1"

// FormatVersion is the version of the segment format this package writes and reads.
const FormatVersion = 1

// TrailerSize is the length of the sha256 that ends every segment.
const TrailerSize = sha256.Size

// ErrCorrupt is wrapped by every error that says a segment is not a valid segment: bad magic or
// version, a truncated object, a record that does not parse, revisions out of order, a header
// that does not match the records, a trailer that does not match the content.
var ErrCorrupt = errors.New("corrupt capture segment")

// Byte offsets of the fixed fields of the version 1 header body (after Magic and the body's
// length), all big-endian; the namespace and the cluster name follow, each as a uint16 length
// and its bytes.
const (
	offVersion     = 0  // uint16
	offClusterID   = 2  // uint64
	offFirstRev    = 10 // int64
	offLastRev     = 18 // int64
	offFirstTime   = 26 // int64, Unix nanoseconds
	offLastTime    = 34 // int64, Unix nanoseconds
	offRevisions   = 42 // int64, number of records
	offEvents      = 50 // int64, number of events in all records
	fixedHeaderLen = 58
	// maxHeaderLen bounds the header body a reader accepts: two names of at most 253 bytes.
	maxHeaderLen = fixedHeaderLen + 2*(2+253)
	// preambleLen is Magic and the uint32 header body length.
	preambleLen = len(Magic) + 4
	// recordFixedLen is a record's revision (int64), time (int64, Unix nanoseconds) and event
	// count (uint32).
	recordFixedLen = 20
)

// Header is the summary at the start of a segment.
type Header struct {
	// Version is the format version (FormatVersion).
	Version int
	// Identity is the cluster the events were captured from.
	Identity snapshot.Identity
	// FirstRevision and LastRevision are the revisions of the first and last record.
	FirstRevision, LastRevision int64
	// FirstTime and LastTime are when the capturer received the first and the last revision.
	FirstTime, LastTime time.Time
	// Revisions is the number of records (one per revision); Events the number of events in all.
	Revisions, Events int64
}

// Segment is a finished segment object.
type Segment struct {
	// Header is what the object's header says.
	Header Header
	// Data is the whole object: header, records and trailer.
	Data []byte
	// SHA256 is the sha256 of Data (the object as stored, trailer included).
	SHA256 [sha256.Size]byte
}

// Key is the segment's object key under backup prefix prefix (see SegmentKey).
func (s *Segment) Key(prefix string) string {
	return SegmentKey(prefix, s.Header.Identity, s.Header.FirstRevision, s.Header.LastRevision, s.Header.FirstTime)
}

// Builder builds one segment in memory, record by record: the header is written with zero
// summary fields when the builder starts and filled in by Finish, so the whole segment is one
// buffer and finishing it copies it once. A Builder is reused segment after segment.
type Builder struct {
	id  snapshot.Identity
	buf []byte
	h   Header
}

// NewBuilder returns a Builder of segments of cluster id, which must be Tagged with valid
// Kubernetes names (or snapshot.UnknownCluster).
func NewBuilder(id snapshot.Identity) (*Builder, error) {
	if !validIdentity(id) {
		return nil, fmt.Errorf("capture: identity %s is not a namespace and a cluster name", id.Describe())
	}
	b := &Builder{id: id}
	b.reset()
	return b, nil
}

func (b *Builder) reset() {
	b.h = Header{Version: FormatVersion, Identity: b.id}
	b.buf = append(b.buf[:0], Magic...)
	body := fixedHeaderLen + 4 + len(b.id.Namespace) + len(b.id.Cluster)
	b.buf = binary.BigEndian.AppendUint32(b.buf, u32(body))
	b.buf = binary.BigEndian.AppendUint16(b.buf, FormatVersion)
	b.buf = binary.BigEndian.AppendUint64(b.buf, b.id.ClusterID)
	b.buf = append(b.buf, make([]byte, fixedHeaderLen-offFirstRev)...)
	for _, s := range []string{b.id.Namespace, b.id.Cluster} {
		b.buf = binary.BigEndian.AppendUint16(b.buf, uint16(min(len(s), math.MaxUint16))) // valid names are at most 253 bytes
		b.buf = append(b.buf, s...)
	}
}

// Revisions is the number of records appended since the segment started.
func (b *Builder) Revisions() int64 { return b.h.Revisions }

// Size is the length the segment would have if it were finished now, trailer included.
func (b *Builder) Size() int { return len(b.buf) + TrailerSize }

// Append adds the record of revision rev, received at t: its events, in the order etcd sent
// them. rev must be above the last appended revision, events non-empty, and every event's
// Kv.ModRevision rev (etcd sets a deletion's too).
func (b *Builder) Append(rev int64, t time.Time, events []*mvccpb.Event) error {
	switch {
	case rev < 1 || (b.h.Revisions > 0 && rev <= b.h.LastRevision):
		return fmt.Errorf("capture: appending revision %d after %d: revisions must increase", rev, b.h.LastRevision)
	case len(events) == 0:
		return fmt.Errorf("capture: appending revision %d without events", rev)
	case len(events) > math.MaxUint32:
		return fmt.Errorf("capture: appending revision %d: %d events", rev, len(events))
	}
	start := len(b.buf)
	b.buf = binary.BigEndian.AppendUint32(b.buf, 0) // the record's length, set below
	b.buf = appendInt64(b.buf, rev)
	b.buf = appendInt64(b.buf, t.UnixNano())
	b.buf = binary.BigEndian.AppendUint32(b.buf, u32(len(events)))
	for i, ev := range events {
		if err := checkEvent(ev, rev); err != nil {
			b.buf = b.buf[:start]
			return fmt.Errorf("capture: appending event %d of revision %d: %w", i, rev, err)
		}
		n := ev.Size()
		if n > math.MaxUint32 {
			b.buf = b.buf[:start]
			return fmt.Errorf("capture: event %d of revision %d takes %d bytes, more than a record holds", i, rev, n)
		}
		b.buf = binary.BigEndian.AppendUint32(b.buf, u32(n))
		at := len(b.buf)
		b.buf = append(b.buf, make([]byte, n)...)
		if _, err := ev.MarshalToSizedBuffer(b.buf[at:]); err != nil {
			b.buf = b.buf[:start]
			return fmt.Errorf("capture: encoding event %d of revision %d: %w", i, rev, err)
		}
	}
	recLen := len(b.buf) - start - 4
	if recLen > math.MaxUint32 {
		b.buf = b.buf[:start]
		return fmt.Errorf("capture: revision %d takes %d bytes, more than a record holds", rev, recLen)
	}
	binary.BigEndian.PutUint32(b.buf[start:], u32(recLen))
	if b.h.Revisions == 0 {
		b.h.FirstRevision, b.h.FirstTime = rev, t
	}
	b.h.LastRevision, b.h.LastTime = rev, t
	b.h.Revisions++
	b.h.Events += int64(len(events))
	return nil
}

// checkEvent checks what the reader will check: a PUT or DELETE of a key at revision rev.
func checkEvent(ev *mvccpb.Event, rev int64) error {
	switch {
	case ev == nil || ev.Kv == nil:
		return errors.New("event without a key-value")
	case ev.Type != mvccpb.PUT && ev.Type != mvccpb.DELETE:
		return fmt.Errorf("event type %d", ev.Type)
	case ev.Kv.ModRevision != rev:
		return fmt.Errorf("event of key %q at mod revision %d in the record of revision %d", ev.Kv.Key, ev.Kv.ModRevision, rev)
	}
	return nil
}

// Finish completes the segment (header summary and trailer), returns it in a buffer of its own
// and starts the next segment in the builder's buffer. It fails on an empty segment.
func (b *Builder) Finish() (Segment, error) {
	if b.h.Revisions == 0 {
		return Segment{}, errors.New("capture: finishing an empty segment")
	}
	hdr := b.buf[preambleLen:]
	for off, v := range map[int]int64{
		offFirstRev: b.h.FirstRevision, offLastRev: b.h.LastRevision,
		offFirstTime: b.h.FirstTime.UnixNano(), offLastTime: b.h.LastTime.UnixNano(),
		offRevisions: b.h.Revisions, offEvents: b.h.Events,
	} {
		putInt64(hdr[off:], v)
	}
	sum := sha256.Sum256(b.buf)
	data := make([]byte, len(b.buf)+TrailerSize)
	copy(data[copy(data, b.buf):], sum[:])
	seg := Segment{Header: b.h, Data: data, SHA256: sha256.Sum256(data)}
	// Times round-trip through Unix nanoseconds: the header a reader returns is this one.
	seg.Header.FirstTime = time.Unix(0, b.h.FirstTime.UnixNano()).UTC()
	seg.Header.LastTime = time.Unix(0, b.h.LastTime.UnixNano()).UTC()
	b.reset()
	return seg, nil
}

// appendInt64, putInt64 and getInt64 store an int64 as the big-endian uint64 of the same bits.
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) } //nolint:gosec // two's complement bits, read back by getInt64

func putInt64(b []byte, v int64) { binary.BigEndian.PutUint64(b, uint64(v)) } //nolint:gosec // two's complement bits, read back by getInt64

func getInt64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) } //nolint:gosec // the bits putInt64 stored; readers check the range

// u32 converts a length its caller checked to fit a uint32.
func u32(n int) uint32 {
	if n < 0 || n > math.MaxUint32 {
		panic(fmt.Sprintf("capture: length %d does not fit a uint32", n))
	}
	return uint32(n)
}

// capacity is the size of the builder's buffer, which it keeps from segment to segment.
func (b *Builder) capacity() int { return cap(b.buf) }
