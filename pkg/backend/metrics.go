package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation label values of the backend metrics.
const (
	OpPut      = "put"
	OpGet      = "get"
	OpGetRange = "get_range"
	OpStat     = "stat"
	OpList     = "list"
	OpDelete   = "delete"
)

// Metrics holds the Prometheus collectors shared by every Backend wrapped with it. Create one per
// registry with NewMetrics and wrap each backend with Wrap.
type Metrics struct {
	ops      *prometheus.CounterVec
	failures *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the backend collectors with reg. Registering twice with the same
// registry returns collectors that share the already registered series.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"backend", "operation"}
	m := &Metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_operator_backend_operations_total",
			Help: "Object store operations started, by backend and operation.",
		}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_operator_backend_operation_failures_total",
			Help: "Object store operations that failed, by backend and operation (not found is not a failure).",
		}, labels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_operator_backend_transferred_bytes_total",
			Help: "Bytes uploaded by put and downloaded by get and get_range.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etcd_operator_backend_operation_duration_seconds",
			Help: "Duration of object store operations; for get and get_range until the stream is closed.",
			// 5 ms to ~85 min: metadata calls and multi-GiB snapshot transfers.
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10),
		}, labels),
	}
	var err error
	if m.ops, err = register(reg, m.ops); err != nil {
		return nil, err
	}
	if m.failures, err = register(reg, m.failures); err != nil {
		return nil, err
	}
	if m.bytes, err = register(reg, m.bytes); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("registering backend metrics: %w", err)
	}
	return c, nil
}

// Wrap returns b instrumented with m; name is the value of the "backend" label: the provider
// ("s3", "gcs", "abs", "oss", "local"), never a bucket, endpoint or other user-supplied text, so that
// the number of series stays bounded.
func (m *Metrics) Wrap(b Backend, name string) Backend {
	return &instrumented{inner: b, m: m, name: name}
}

type instrumented struct {
	inner Backend
	m     *Metrics
	name  string
}

// observe records one finished operation.
func (i *instrumented) observe(op string, start time.Time, n int64, err error) {
	i.m.duration.WithLabelValues(i.name, op).Observe(time.Since(start).Seconds())
	if n > 0 {
		i.m.bytes.WithLabelValues(i.name, op).Add(float64(n))
	}
	if err != nil && !IsNotFound(err) {
		i.m.failures.WithLabelValues(i.name, op).Inc()
	}
}

func (i *instrumented) begin(op string) time.Time {
	i.m.ops.WithLabelValues(i.name, op).Inc()
	return time.Now()
}

// Put implements Backend.
func (i *instrumented) Put(ctx context.Context, key string, r io.Reader) error {
	start := i.begin(OpPut)
	cr := &countingReader{r: r}
	err := i.inner.Put(ctx, key, cr)
	i.observe(OpPut, start, cr.n, err)
	return err
}

// Get implements Backend.
func (i *instrumented) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	start := i.begin(OpGet)
	rc, err := i.inner.Get(ctx, key)
	if err != nil {
		i.observe(OpGet, start, 0, err)
		return nil, err
	}
	return &observedReader{rc: rc, done: func(n int64, err error) { i.observe(OpGet, start, n, err) }}, nil
}

// GetRange implements Backend.
func (i *instrumented) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := i.begin(OpGetRange)
	rc, err := i.inner.GetRange(ctx, key, offset, length)
	if err != nil {
		i.observe(OpGetRange, start, 0, err)
		return nil, err
	}
	return &observedReader{rc: rc, done: func(n int64, err error) { i.observe(OpGetRange, start, n, err) }}, nil
}

// Stat implements Backend.
func (i *instrumented) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	start := i.begin(OpStat)
	info, err := i.inner.Stat(ctx, key)
	i.observe(OpStat, start, 0, err)
	return info, err
}

// List implements Backend.
func (i *instrumented) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := i.begin(OpList)
	infos, err := i.inner.List(ctx, prefix)
	i.observe(OpList, start, 0, err)
	return infos, err
}

// Delete implements Backend.
func (i *instrumented) Delete(ctx context.Context, key string) error {
	start := i.begin(OpDelete)
	err := i.inner.Delete(ctx, key)
	i.observe(OpDelete, start, 0, err)
	return err
}

// Close implements Backend.
func (i *instrumented) Close() error { return i.inner.Close() }

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// observedReader counts bytes and the first read error, and reports them once on Close.
type observedReader struct {
	rc   io.ReadCloser
	n    int64
	err  error
	once sync.Once
	done func(n int64, err error)
}

func (o *observedReader) Read(p []byte) (int, error) {
	n, err := o.rc.Read(p)
	o.n += int64(n)
	if err != nil && err != io.EOF && o.err == nil {
		o.err = err
	}
	return n, err
}

func (o *observedReader) Close() error {
	err := o.rc.Close()
	o.once.Do(func() { o.done(o.n, errors.Join(o.err, err)) })
	return err
}
