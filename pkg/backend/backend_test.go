package backend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
)

func TestPrefixAcceptance(t *testing.T) {
	backendtest.AcceptanceTest(t, backend.WithPrefix(memory.New(), "cluster-a"))
}

func TestMetricsAcceptance(t *testing.T) {
	m, err := backend.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	backendtest.AcceptanceTest(t, m.Wrap(memory.New(), "memory"))
}

func TestWithPrefixEmptyIsIdentity(t *testing.T) {
	b := memory.New()
	for _, p := range []string{"", "/", "//"} {
		if got := backend.WithPrefix(b, p); got != backend.Backend(b) {
			t.Errorf("WithPrefix(b, %q) wrapped b; want b itself", p)
		}
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := backend.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.NewMetrics(reg); err != nil {
		t.Fatalf("registering twice with one registry: %v", err)
	}
	b := m.Wrap(memory.New(), "mem")
	ctx := t.Context()
	if err := b.Put(ctx, "k", strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, rc)
	_ = rc.Close()
	_, _ = b.Stat(ctx, "missing") // not found: counted, not a failure
	failing, cancel := context.WithCancel(ctx)
	cancel()
	_ = b.Put(failing, "k2", strings.NewReader("x"))

	cases := []struct {
		metric    string
		operation string
		want      float64
	}{
		{"etcd_operator_backend_operations_total", backend.OpPut, 2},
		{"etcd_operator_backend_operations_total", backend.OpGet, 1},
		{"etcd_operator_backend_operations_total", backend.OpStat, 1},
		{"etcd_operator_backend_operation_failures_total", backend.OpPut, 1},
		{"etcd_operator_backend_operation_failures_total", backend.OpStat, 0},
		{"etcd_operator_backend_transferred_bytes_total", backend.OpPut, 5},
		{"etcd_operator_backend_transferred_bytes_total", backend.OpGet, 5},
	}
	for _, tc := range cases {
		t.Run(tc.metric+"/"+tc.operation, func(t *testing.T) {
			if got := counterValue(t, reg, tc.metric, tc.operation); got != tc.want {
				t.Errorf("%s{operation=%q} = %v, want %v", tc.metric, tc.operation, got, tc.want)
			}
		})
	}
	if n := testutil.CollectAndCount(reg, "etcd_operator_backend_operation_duration_seconds"); n != 3 {
		t.Errorf("duration histograms = %d series, want 3 (put, get, stat)", n)
	}
}

// counterValue returns the value of the counter metric{backend="mem",operation=operation}, 0
// when there is no such series.
func counterValue(t *testing.T, reg *prometheus.Registry, metric, operation string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == operation {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestUploadReaderCause(t *testing.T) {
	readErr := errors.New("disk on fire")
	sdkErr := errors.New("sdk: upload failed")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		ctx   context.Context
		r     io.Reader
		err   error
		wants []error
	}{
		{"success stays nil", context.Background(), strings.NewReader("x"), nil, nil},
		{"reader error joined", context.Background(), io.MultiReader(strings.NewReader("x"), &errReader{readErr}), sdkErr, []error{readErr, sdkErr}},
		{"reader error already wrapped", context.Background(), &errReader{readErr}, fmt.Errorf("x: %w", readErr), []error{readErr}},
		{"context error joined", cancelled, strings.NewReader("x"), sdkErr, []error{context.Canceled, sdkErr}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := backend.NewUploadReader(tc.ctx, tc.r)
			_, _ = io.Copy(io.Discard, u)
			got := u.Cause(tc.err)
			if tc.wants == nil && got != nil {
				t.Fatalf("Cause(nil) = %v, want nil", got)
			}
			for _, w := range tc.wants {
				if !errors.Is(got, w) {
					t.Errorf("Cause() = %v, want it to wrap %v", got, w)
				}
			}
		})
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"plain key", backend.ValidateKey("a/b.db"), false},
		{"empty key", backend.ValidateKey(""), true},
		{"key too long", backend.ValidateKey(strings.Repeat("k", backend.MaxKeyLen+1)), true},
		{"invalid UTF-8", backend.ValidateKey("a\xffb"), true},
		{"range to end", backend.ValidateRange(0, -1), false},
		{"range", backend.ValidateRange(10, 5), false},
		{"negative offset", backend.ValidateRange(-1, 5), true},
		{"zero length", backend.ValidateRange(0, 0), true},
		{"length below -1", backend.ValidateRange(0, -2), true},
	}
	for _, tc := range cases {
		if (tc.err != nil) != tc.wantErr {
			t.Errorf("%s: error = %v, want error %v", tc.name, tc.err, tc.wantErr)
		}
	}
}
