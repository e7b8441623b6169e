package capture

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Defaults of the Config fields left zero.
const (
	DefaultSegmentInterval  = 5 * time.Second
	DefaultSegmentMaxBytes  = 8 << 20
	DefaultMaxBufferedBytes = 64 << 20
	DefaultRetryInitial     = 500 * time.Millisecond
	DefaultRetryMax         = 30 * time.Second
	DefaultUploadTimeout    = time.Minute
	DefaultFlushTimeout     = 5 * time.Second
)

// Config says what a Capturer captures, where to, and how.
type Config struct {
	// Client watches the cluster: normally a *clientv3.Client (of one or several members; the
	// client moves to another endpoint when one fails). It is not closed by the Capturer. Its
	// user must be allowed to read the whole keyspace (etcd's root role when auth is on).
	Client clientv3.Watcher
	// Backend is where segments go: the store of the cluster's full backups.
	Backend backend.Backend
	// Prefix is the backup prefix of the cluster's full backups (non-empty); segments go
	// under SegmentDir(Prefix, Identity).
	Prefix string
	// Identity is the cluster's: Tagged, with valid names (see snapshot.ClusterKey).
	Identity snapshot.Identity
	// StartRevision is the first revision to capture: a full snapshot's revision + 1, or
	// LastCaptured + 1 to resume. At least 2 (revision 1 of a new cluster changes no key).
	StartRevision int64
	// SegmentInterval is the longest a segment stays open after its first revision arrived
	// (the capture's recovery point objective, plus the upload); DefaultSegmentInterval if 0.
	SegmentInterval time.Duration
	// SegmentMaxBytes closes a segment once it reaches this size (it exceeds it by at most
	// one revision); DefaultSegmentMaxBytes if 0.
	SegmentMaxBytes int
	// MaxBufferedBytes bounds the closed segments waiting for upload while the store fails;
	// DefaultMaxBufferedBytes if 0. Beyond it Run returns ErrBufferFull.
	MaxBufferedBytes int64
	// RetryInitial and RetryMax bound the backoff between attempts to upload a segment and
	// between watches after a watch failed: it starts at RetryInitial and doubles up to
	// RetryMax. Defaults DefaultRetryInitial and DefaultRetryMax.
	RetryInitial, RetryMax time.Duration
	// UploadTimeout bounds one attempt to upload a segment; DefaultUploadTimeout if 0.
	UploadTimeout time.Duration
	// FlushTimeout bounds the flush when the capture stops (see Run); DefaultFlushTimeout if 0,
	// no flush if negative. Keep it well under the leader election's lease: a flush must end
	// before another capturer of the cluster starts.
	FlushTimeout time.Duration
	// Logger receives the capture's logs; if it is the zero Logger, Run logs to the logger of
	// its context (logr.FromContextOrDiscard).
	Logger logr.Logger
	// Clock times segments and retries; the real clock if nil.
	Clock clock.Clock
}

// complete fills in the defaults and checks the rest.
func (c *Config) complete() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("no etcd client"))
	}
	if c.Backend == nil {
		errs = append(errs, errors.New("no backend"))
	}
	if c.Prefix == "" {
		errs = append(errs, errors.New("empty prefix"))
	}
	if !validIdentity(c.Identity) {
		errs = append(errs, fmt.Errorf("identity %s is not a namespace and a cluster name", c.Identity.Describe()))
	}
	if key := SegmentKey(c.Prefix, c.Identity, math.MaxInt64, math.MaxInt64, time.Time{}); len(key) > backend.MaxKeyLen {
		errs = append(errs, fmt.Errorf("prefix and identity make segment keys of %d bytes, more than %d", len(key), backend.MaxKeyLen))
	}
	if c.StartRevision < 2 {
		errs = append(errs, fmt.Errorf("start revision %d: want at least 2", c.StartRevision))
	}
	setDefault(&c.SegmentInterval, DefaultSegmentInterval)
	setDefault(&c.SegmentMaxBytes, DefaultSegmentMaxBytes)
	setDefault(&c.MaxBufferedBytes, DefaultMaxBufferedBytes)
	setDefault(&c.RetryInitial, DefaultRetryInitial)
	setDefault(&c.RetryMax, DefaultRetryMax)
	setDefault(&c.UploadTimeout, DefaultUploadTimeout)
	setDefault(&c.FlushTimeout, DefaultFlushTimeout)
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.SegmentInterval < 0 || c.SegmentMaxBytes < 0 || c.MaxBufferedBytes < 0 || c.RetryInitial < 0 || c.RetryMax < c.RetryInitial || c.UploadTimeout < 0 {
		errs = append(errs, errors.New("negative durations or sizes, or RetryMax below RetryInitial"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("capture: invalid config: %w", err)
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// backoff is the wait between retries: initial, doubling up to max.
type backoff struct {
	initial, max, next time.Duration
}

func newBackoff(c *Config) *backoff {
	return &backoff{initial: c.RetryInitial, max: c.RetryMax, next: c.RetryInitial}
}

// wait returns the next wait and doubles the one after.
func (b *backoff) wait() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d
}

func (b *backoff) reset() { b.next = b.initial }
