package volume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// Config configures a Client.
type Config struct {
	// Endpoint is the server's base URL, e.g. http://10.244.0.17:8080.
	Endpoint string
	// Token is the bearer token the server was started with.
	Token string
	// HTTPClient sends the requests; nil: a client without a timeout (objects are streamed for
	// as long as the caller's context allows).
	HTTPClient *http.Client
}

func (c Config) validate() error {
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil:
		return fmt.Errorf("volume: endpoint %q: %w", c.Endpoint, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("volume: endpoint %q: want http://<host>:<port> or https://", c.Endpoint)
	case c.Token == "":
		return errors.New("volume: a token is required")
	}
	return nil
}

// Client is a backend.Backend served by Handler.
type Client struct {
	base  string
	token string
	http  *http.Client
}

var _ backend.Backend = (*Client)(nil)

// New returns a Client of the server cfg names. It does not dial.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(cfg.Endpoint, "/"), token: cfg.Token, http: hc}, nil
}

// request sends method to path with query q and returns the response of a status in ok; any
// other status is an error (backend.ErrNotFound for 404, backend.ErrPermissionDenied for 401 and
// 403) and the body is closed.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body io.Reader, header http.Header, ok ...int) (*http.Response, error) {
	// The base is the server the caller configured (the volume's pod); path and query are ours.
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+"?"+q.Encode(), body) //nolint:gosec // G704: see above
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if method == http.MethodPut {
		req.ContentLength = -1 // streamed, chunked
		req.Trailer = http.Header{SHA256Trailer: nil}
		if tb, ok := body.(*trailedBody); ok {
			tb.req = req
		}
	}
	resp, err := c.http.Do(req) //nolint:gosec // G704: the configured server, as above
	if err != nil {
		return nil, err
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return resp, nil
		}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	if resp.StatusCode == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", backend.ErrNotFound, err)
	}
	return nil, backend.MarkStatus(err, resp.StatusCode)
}

func keyQuery(key string) url.Values { return url.Values{"key": {key}} }

// Put implements backend.Backend. The body is streamed (chunked) and followed by its sha256 as
// a trailer; the server commits the object only when they match.
func (c *Client) Put(ctx context.Context, key string, r io.Reader) error {
	if err := backend.ValidateKey(key); err != nil {
		return fmt.Errorf("volume: putting %q: %w", key, err)
	}
	ur := backend.NewUploadReader(ctx, r)
	body := &trailedBody{r: ur, h: sha256.New()}
	resp, err := c.request(ctx, http.MethodPut, "/object", keyQuery(key), body, nil, http.StatusNoContent)
	if err != nil {
		return fmt.Errorf("volume: putting %q: %w", key, ur.Cause(err))
	}
	_ = resp.Body.Close()
	return nil
}

// trailedBody hashes what it reads and sets the request's sha256 trailer at the end: net/http
// sends trailers once the body has returned io.EOF.
type trailedBody struct {
	r   io.Reader
	h   hash.Hash
	req *http.Request
}

func (t *trailedBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	if errors.Is(err, io.EOF) && t.req != nil {
		t.req.Trailer.Set(SHA256Trailer, hex.EncodeToString(t.h.Sum(nil)))
	}
	return n, err
}

// Get implements backend.Backend.
func (c *Client) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	resp, err := c.request(ctx, http.MethodGet, "/object", keyQuery(key), nil, nil, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("volume: getting %q: %w", key, err)
	}
	return resp.Body, nil
}

// GetRange implements backend.Backend.
func (c *Client) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, fmt.Errorf("volume: getting %q range: %w", key, err)
	}
	spec := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 {
		spec += strconv.FormatInt(offset+length-1, 10)
	}
	resp, err := c.request(ctx, http.MethodGet, "/object", keyQuery(key), nil, http.Header{"Range": {spec}}, http.StatusPartialContent)
	if err != nil {
		return nil, fmt.Errorf("volume: getting %q range: %w", key, err)
	}
	return resp.Body, nil
}

// Stat implements backend.Backend.
func (c *Client) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	resp, err := c.request(ctx, http.MethodHead, "/object", keyQuery(key), nil, nil, http.StatusOK)
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("volume: stat %q: %w", key, err)
	}
	_ = resp.Body.Close()
	mod, err := time.Parse(time.RFC3339Nano, resp.Header.Get(ModTimeHeader))
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("volume: stat %q: modification time: %w", key, err)
	}
	return backend.ObjectInfo{Key: key, Size: resp.ContentLength, ModTime: mod}, nil
}

// List implements backend.Backend.
func (c *Client) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	resp, err := c.request(ctx, http.MethodGet, "/list", url.Values{"prefix": {prefix}}, nil, nil, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("volume: listing %q: %w", prefix, err)
	}
	defer resp.Body.Close()
	var entries []listEntry
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil {
		return nil, fmt.Errorf("volume: listing %q: %w", prefix, err)
	}
	infos := make([]backend.ObjectInfo, 0, len(entries))
	for _, e := range entries {
		infos = append(infos, backend.ObjectInfo{Key: e.Key, Size: e.Size, ModTime: e.ModTime})
	}
	backend.SortObjects(infos)
	return infos, nil
}

// Delete implements backend.Backend.
func (c *Client) Delete(ctx context.Context, key string) error {
	resp, err := c.request(ctx, http.MethodDelete, "/object", keyQuery(key), nil, nil, http.StatusNoContent)
	if err != nil {
		return fmt.Errorf("volume: deleting %q: %w", key, err)
	}
	_ = resp.Body.Close()
	return nil
}

// Close implements backend.Backend.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}
