package volume

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
)

const token = "s3cret-token"

// serve starts Handler on a local provider in a temporary directory and returns the server and
// the provider behind it.
func serve(t *testing.T) (*httptest.Server, *local.Backend) {
	t.Helper()
	b, err := local.New(t.Context(), local.Config{Dir: filepath.Join(t.TempDir(), "volume")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(b, token))
	t.Cleanup(srv.Close)
	return srv, b
}

func client(t *testing.T, endpoint, tok string) *Client {
	t.Helper()
	c, err := New(Config{Endpoint: endpoint, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestAcceptance: the client against the server on a real directory keeps the whole
// backend.Backend contract, as every provider must.
func TestAcceptance(t *testing.T) {
	srv, _ := serve(t)
	backendtest.AcceptanceTest(t, client(t, srv.URL, token))
}

// TestWrongTokenRefused: a missing or wrong token is ErrPermissionDenied and reaches nothing.
func TestWrongTokenRefused(t *testing.T) {
	srv, b := serve(t)
	if err := b.Put(t.Context(), "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"wrong", token + "x", "Bearer " + token} {
		c := client(t, srv.URL, tok)
		if _, err := c.Get(t.Context(), "k"); !backend.IsPermissionDenied(err) {
			t.Errorf("token %q: Get = %v, want permission denied", tok, err)
		}
		if err := c.Delete(t.Context(), "k"); !backend.IsPermissionDenied(err) {
			t.Errorf("token %q: Delete = %v, want permission denied", tok, err)
		}
	}
	if _, err := b.Stat(t.Context(), "k"); err != nil {
		t.Fatalf("the object is gone after refused requests: %v", err)
	}
	if _, err := New(Config{Endpoint: srv.URL}); err == nil {
		t.Fatal("New without a token succeeded")
	}
}

// TestBodyCutAtAChunkBoundaryLeavesNothing: a PUT whose chunked body ends cleanly but early
// (a proxy or a client that loses the rest and still closes the stream) has no matching
// trailer, so the server commits nothing, and an older object stays.
func TestBodyCutAtAChunkBoundaryLeavesNothing(t *testing.T) {
	srv, b := serve(t)
	if err := b.Put(t.Context(), "old", strings.NewReader("older object")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, trailer string }{
		{"new", ""},
		{"old", ""},
		{"old", "0000000000000000000000000000000000000000000000000000000000000000"},
	} {
		status := rawPut(t, srv.URL, tc.key, "half of the object", tc.trailer)
		if status != http.StatusInternalServerError {
			t.Errorf("PUT %s without the body's sha256 (trailer %q): status %d, want 500", tc.key, tc.trailer, status)
		}
	}
	if _, err := b.Stat(t.Context(), "new"); !backend.IsNotFound(err) {
		t.Errorf("Stat(new) after a cut upload = %v, want not found", err)
	}
	rc, err := b.Get(t.Context(), "old")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "older object" {
		t.Errorf("old = %q after cut overwrites, want the older object", got)
	}
}

// rawPut sends a chunked PUT with body and, when set, a trailer, and returns the status.
func rawPut(t *testing.T, endpoint, key, body, trailer string) int {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var sb strings.Builder
	fmt.Fprintf(&sb, "PUT /object?key=%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\nTrailer: %s\r\n\r\n", key, token, SHA256Trailer)
	fmt.Fprintf(&sb, "%x\r\n%s\r\n0\r\n", len(body), body)
	if trailer != "" {
		fmt.Fprintf(&sb, "%s: %s\r\n", SHA256Trailer, trailer)
	}
	sb.WriteString("\r\n")
	if _, err := io.WriteString(conn, sb.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestShortReadIsAnError: a GET whose server cannot send the whole object (here: the object
// shrinks between the server's Stat and its read) is an error on the client, never a shorter
// object.
func TestShortReadIsAnError(t *testing.T) {
	b, err := local.New(t.Context(), local.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	shrinking := &shrinkOnGet{Backend: b}
	srv := httptest.NewServer(Handler(shrinking, token))
	defer srv.Close()
	if err := b.Put(t.Context(), "k", strings.NewReader(strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	rc, err := client(t, srv.URL, token).Get(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %d bytes, error %v; want io.ErrUnexpectedEOF", n, err)
	}
}

// shrinkOnGet returns half of each object from Get.
type shrinkOnGet struct{ *local.Backend }

func (s *shrinkOnGet) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := s.Backend.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	info, _ := s.Stat(ctx, key)
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(rc, info.Size/2), rc}, nil
}
