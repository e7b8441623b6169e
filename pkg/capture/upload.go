package capture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// Progress is where a capture stands, for status and metrics.
type Progress struct {
	// UploadedRevision is the last revision stored in the bucket (StartRevision - 1 before the
	// first upload); UploadedTime is when the capturer received it (zero before the first
	// upload) and UploadedKey the key of the segment that holds it.
	UploadedRevision int64
	UploadedTime     time.Time
	UploadedKey      string
	// Segments and UploadedBytes count the segments uploaded and their bytes.
	Segments      int64
	UploadedBytes int64
	// AppendedRevision is the last revision received from the watch, AppendedTime when.
	AppendedRevision int64
	AppendedTime     time.Time
	// EtcdRevision is the highest store revision etcd reported to the watch; EtcdRevision -
	// UploadedRevision is the capture's lag in revisions.
	EtcdRevision int64
	// PendingSegments and PendingBytes are the closed segments waiting for upload.
	PendingSegments int
	PendingBytes    int64
	// Lag is how long the oldest revision received but not uploaded has waited (0 when there
	// is none): what a loss of the capturer would cost now, beyond what etcd still holds.
	Lag time.Duration
}

// Progress returns where the capture stands. It is safe to call at any time, from any
// goroutine.
func (c *Capturer) Progress() Progress {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.prog
	oldest := c.openSince
	if len(c.queue) > 0 {
		oldest = c.queue[0].Header.FirstTime
	}
	if !oldest.IsZero() {
		p.Lag = max(0, c.cfg.Clock.Since(oldest))
	}
	return p
}

// uploadLoop uploads the queued segments one at a time, head first, retrying each until it
// is stored: so segments are stored strictly in revision order. It returns an ErrConflict,
// or ctx's error.
func (c *Capturer) uploadLoop(ctx context.Context) error {
	bo := newBackoff(&c.cfg)
	for {
		seg := c.head()
		if seg == nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-c.wake:
			}
			continue
		}
		key := seg.Key(c.cfg.Prefix)
		err := c.upload(ctx, key, seg)
		switch {
		case err == nil:
			c.uploaded(key, seg)
			bo.reset()
			continue
		case errors.Is(err, ErrConflict):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		d := bo.wait()
		c.log.Error(err, "Uploading segment failed; retrying", "key", key, "retryIn", d)
		t := c.cfg.Clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// head is the oldest segment waiting for upload, nil if none.
func (c *Capturer) head() *Segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil
	}
	return c.queue[0]
}

// upload stores seg under key unless it is there already. It never overwrites: an existing
// object must be the same bytes (a previous attempt stored it and then failed), else the
// error wraps ErrConflict. (The store has no conditional put: a writer that stores the key
// between Stat and Put is not detected; one Capturer per cluster is the caller's part.)
func (c *Capturer) upload(ctx context.Context, key string, seg *Segment) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.UploadTimeout)
	defer cancel()
	_, err := c.cfg.Backend.Stat(ctx, key)
	switch {
	case err == nil:
		return sameObject(ctx, c.cfg.Backend, key, seg)
	case !backend.IsNotFound(err):
		return err
	}
	return c.cfg.Backend.Put(ctx, key, bytes.NewReader(seg.Data))
}

// sameObject compares the object stored under key with seg, as read back: the sizes Stat
// reports cannot tell, since a store may compress and encrypt (backend.WithEncoding).
func sameObject(ctx context.Context, b backend.Backend, key string, seg *Segment) error {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("reading the existing %s: %w", key, err)
	}
	if n != int64(len(seg.Data)) || !bytes.Equal(h.Sum(nil), seg.SHA256[:]) {
		return fmt.Errorf("%w: %s holds other bytes (%d, the segment has %d)", ErrConflict, key, n, len(seg.Data))
	}
	return nil
}

// uploaded takes seg, stored under key, off the queue.
func (c *Capturer) uploaded(key string, seg *Segment) {
	c.mu.Lock()
	c.queue[0] = nil
	c.queue = c.queue[1:]
	p := &c.prog
	p.UploadedRevision, p.UploadedTime, p.UploadedKey = seg.Header.LastRevision, seg.Header.LastTime, key
	p.Segments++
	p.UploadedBytes += int64(len(seg.Data))
	p.PendingSegments, p.PendingBytes = len(c.queue), p.PendingBytes-int64(len(seg.Data))
	c.mu.Unlock()
	c.log.V(1).Info("Uploaded segment", "key", key, "firstRevision", seg.Header.FirstRevision,
		"lastRevision", seg.Header.LastRevision, "bytes", len(seg.Data))
}
