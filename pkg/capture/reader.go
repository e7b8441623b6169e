package capture

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Record is one revision of a segment: the events etcd sent for it, in order.
type Record struct {
	Revision int64
	// Time is when the capturer received the revision (UTC, to the nanosecond): a point-in-time
	// restore to a time replays the revisions received at or before it.
	Time   time.Time
	Events []*mvccpb.Event
}

// repeatError marks a revision that a segment holds twice in a row (Check reports it as a
// duplicate as well as making the segment invalid).
type repeatError struct{ rev int64 }

func (e *repeatError) Error() string { return fmt.Sprintf("revision %d repeated", e.rev) }

// Reader reads a segment as a stream: NewReader reads and checks the header, Next returns the
// records in order. Memory use is one record (its buffer is reused) whatever the segment's
// size.
//
// Records are returned before the trailer is checked: they are provisional until Next returns
// io.EOF, which it does only after the last record when the sha256 trailer matches and nothing
// follows it. Every other failure to read a valid segment is an error wrapping ErrCorrupt;
// errors of the underlying reader are returned wrapped, but without ErrCorrupt. Errors are
// sticky.
type Reader struct {
	src  *bufio.Reader
	hash hash.Hash
	// in is src through hash: everything before the trailer is read through it.
	in   io.Reader
	hdr  Header
	rec  bytes.Buffer
	read int64 // records returned
	last int64 // revision of the last record returned
	// lastTime is the time of the last record returned.
	lastTime time.Time
	events   int64
	err      error
}

// NewReader reads the header of the segment src holds.
func NewReader(src io.Reader) (*Reader, error) {
	r := &Reader{src: bufio.NewReader(src), hash: sha256.New()}
	r.in = io.TeeReader(r.src, r.hash)
	if err := r.readHeader(); err != nil {
		return nil, err
	}
	return r, nil
}

// Header is the segment's header.
func (r *Reader) Header() Header { return r.hdr }

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// readErr classifies an error reading what a valid segment holds: an early end is corruption.
func readErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated in %s", what)
	}
	return fmt.Errorf("reading segment %s: %w", what, err)
}

func (r *Reader) readHeader() error {
	var pre [preambleLen]byte
	if _, err := io.ReadFull(r.in, pre[:]); err != nil {
		return readErr("the preamble", err)
	}
	if string(pre[:len(Magic)]) != Magic {
		return corrupt("bad magic %q", pre[:len(Magic)])
	}
	n := binary.BigEndian.Uint32(pre[len(Magic):])
	if n < fixedHeaderLen+4 || n > maxHeaderLen {
		return corrupt("header of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.in, body); err != nil {
		return readErr("the header", err)
	}
	h, err := parseHeader(body)
	if err != nil {
		return err
	}
	r.hdr = h
	return nil
}

func parseHeader(b []byte) (Header, error) {
	be := binary.BigEndian
	if v := be.Uint16(b[offVersion:]); v != FormatVersion {
		return Header{}, corrupt("format version %d, this reader knows %d", v, FormatVersion)
	}
	h := Header{Version: FormatVersion, Identity: snapshot.Identity{ClusterID: be.Uint64(b[offClusterID:])}}
	h.FirstRevision, h.LastRevision = getInt64(b[offFirstRev:]), getInt64(b[offLastRev:])
	h.FirstTime = time.Unix(0, getInt64(b[offFirstTime:])).UTC()
	h.LastTime = time.Unix(0, getInt64(b[offLastTime:])).UTC()
	h.Revisions, h.Events = getInt64(b[offRevisions:]), getInt64(b[offEvents:])
	if h.FirstRevision < 1 || h.LastRevision < h.FirstRevision || h.Revisions < 1 ||
		h.Revisions-1 > h.LastRevision-h.FirstRevision || h.Events < h.Revisions {
		return Header{}, corrupt("header says revisions %d-%d, %d records, %d events", h.FirstRevision, h.LastRevision, h.Revisions, h.Events)
	}
	rest := b[fixedHeaderLen:]
	var names [2]string
	for i := range names {
		if len(rest) < 2 || len(rest)-2 < int(be.Uint16(rest)) {
			return Header{}, corrupt("header names cut short")
		}
		n := int(be.Uint16(rest))
		names[i], rest = string(rest[2:2+n]), rest[2+n:]
	}
	h.Identity.Namespace, h.Identity.Cluster = names[0], names[1]
	if len(rest) != 0 || !validIdentity(h.Identity) {
		return Header{}, corrupt("header identity %q/%q with %d bytes after it", names[0], names[1], len(rest))
	}
	return h, nil
}

// Next returns the next record; io.EOF once the last record has been returned and the trailer
// verified.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if r.read == r.hdr.Revisions {
		r.err = r.finish()
		return Record{}, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return Record{}, err
	}
	return rec, nil
}

func (r *Reader) next() (Record, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r.in, lenBuf[:]); err != nil {
		return Record{}, readErr(fmt.Sprintf("record %d", r.read), err)
	}
	n := int64(binary.BigEndian.Uint32(lenBuf[:]))
	if n < recordFixedLen {
		return Record{}, corrupt("record %d of %d bytes", r.read, n)
	}
	// Copying grows the buffer with the data that arrives, not with what a corrupt length
	// promises.
	r.rec.Reset()
	if _, err := io.CopyN(&r.rec, r.in, n); err != nil {
		return Record{}, readErr(fmt.Sprintf("record %d", r.read), err)
	}
	rec, err := parseRecord(r.rec.Bytes())
	if err != nil {
		return Record{}, fmt.Errorf("record %d: %w", r.read, err)
	}
	prev := r.hdr.FirstRevision - 1
	if r.read > 0 {
		prev = r.last
	}
	switch {
	case r.read == 0 && (rec.Revision != r.hdr.FirstRevision || !rec.Time.Equal(r.hdr.FirstTime)):
		return Record{}, corrupt("first record at revision %d received %s, header says %d at %s", rec.Revision, rec.Time, r.hdr.FirstRevision, r.hdr.FirstTime)
	case rec.Revision == prev:
		return Record{}, fmt.Errorf("%w: record %d: %w", ErrCorrupt, r.read, &repeatError{rev: rec.Revision})
	case rec.Revision < prev || rec.Revision > r.hdr.LastRevision:
		return Record{}, corrupt("record %d at revision %d after %d (header: %d-%d): out of order", r.read, rec.Revision, prev, r.hdr.FirstRevision, r.hdr.LastRevision)
	}
	r.read++
	r.last, r.lastTime = rec.Revision, rec.Time
	r.events += int64(len(rec.Events))
	return rec, nil
}

func parseRecord(b []byte) (Record, error) {
	be := binary.BigEndian
	rev, nanos, count := getInt64(b), getInt64(b[8:]), be.Uint32(b[16:])
	b = b[recordFixedLen:]
	if rev < 1 || count == 0 || int64(count) > int64(len(b)/4) {
		return Record{}, corrupt("record of revision %d with %d events in %d bytes", rev, count, len(b))
	}
	rec := Record{Revision: rev, Time: time.Unix(0, nanos).UTC(), Events: make([]*mvccpb.Event, 0, count)}
	for i := range count {
		if len(b) < 4 || int64(len(b)-4) < int64(be.Uint32(b)) {
			return Record{}, corrupt("event %d of revision %d cut short", i, rev)
		}
		n := int(be.Uint32(b))
		ev := &mvccpb.Event{}
		if err := ev.Unmarshal(b[4 : 4+n]); err != nil {
			return Record{}, corrupt("event %d of revision %d: %v", i, rev, err)
		}
		if err := checkEvent(ev, rec.Revision); err != nil {
			return Record{}, corrupt("event %d of revision %d: %v", i, rev, err)
		}
		rec.Events = append(rec.Events, ev)
		b = b[4+n:]
	}
	if len(b) != 0 {
		return Record{}, corrupt("%d bytes after the events of revision %d", len(b), rev)
	}
	return rec, nil
}

// finish checks the summary against the records, then the trailer, then that nothing follows.
func (r *Reader) finish() error {
	if r.last != r.hdr.LastRevision || r.events != r.hdr.Events || !r.lastTime.Equal(r.hdr.LastTime) {
		return corrupt("records end at revision %d with %d events (received %s), header says %d with %d (at %s)",
			r.last, r.events, r.lastTime, r.hdr.LastRevision, r.hdr.Events, r.hdr.LastTime)
	}
	sum := r.hash.Sum(nil)
	var trailer [TrailerSize]byte
	if _, err := io.ReadFull(r.src, trailer[:]); err != nil {
		return readErr("the trailer", err)
	}
	if !bytes.Equal(sum, trailer[:]) {
		return corrupt("trailer says %s, the content hashes to %s", hex.EncodeToString(trailer[:]), hex.EncodeToString(sum))
	}
	if _, err := r.src.ReadByte(); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("reading segment after its trailer: %w", err)
		}
		return corrupt("data after the trailer")
	}
	return io.EOF
}
