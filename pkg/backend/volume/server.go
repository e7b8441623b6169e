// Package volume serves a backend.Backend over HTTP and reaches one: the groundwork of backups to
// a PersistentVolumeClaim (issue 33 item 2). A short-lived pod mounts the claim and serves the
// local provider on it (Handler); the operators, which cannot mount a tenant's volume, read and
// write it through Client, exactly as they read and write an object store, so that backups,
// retention, restores and drills keep one path for every provider.
//
// The protocol is small and streaming (no object is held in memory):
//
//	PUT    /object?key=K   the body is the object (chunked); trailer X-Content-Sha256 is its
//	                       sha256, checked before the object is committed
//	GET    /object?key=K   the object; with "Range: bytes=O-E" or "bytes=O-", a part (206)
//	HEAD   /object?key=K   Content-Length and X-Mod-Time (RFC 3339, nanoseconds)
//	DELETE /object?key=K   idempotent
//	GET    /list?prefix=P  a JSON array of {key, size, modTime}, sorted by key
//
// Every request carries "Authorization: Bearer <token>"; the server compares it in constant
// time and answers 401 otherwise. Errors are text bodies with the status: 404 for a missing
// object (backend.ErrNotFound on the client), 400 for a bad key or range, 500 for the rest.
package volume

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// Header and trailer names of the protocol.
const (
	// SHA256Trailer carries the hex sha256 of a PUT's body, sent as a trailer after it.
	SHA256Trailer = "X-Content-Sha256"
	// ModTimeHeader carries an object's modification time on HEAD.
	ModTimeHeader = "X-Mod-Time"
)

// listEntry is one object of a /list answer.
type listEntry struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

// Handler serves b to clients that present token. token must not be empty.
func Handler(b backend.Backend, token string) http.Handler {
	s := &server{b: b, token: []byte("Bearer " + token)}
	mux := http.NewServeMux()
	mux.HandleFunc("/object", s.object)
	mux.HandleFunc("GET /list", s.list)
	return s.authorize(mux)
}

type server struct {
	b     backend.Backend
	token []byte
}

func (s *server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.token) == len("Bearer ") || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), s.token) != 1 {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) object(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if err := backend.ValidateKey(key); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.put(w, r, key)
	case http.MethodGet:
		s.get(w, r, key)
	case http.MethodHead:
		info, err := s.b.Stat(r.Context(), key)
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
		w.Header().Set(ModTimeHeader, info.ModTime.UTC().Format(time.RFC3339Nano))
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		if err := s.b.Delete(r.Context(), key); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "PUT, GET, HEAD, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// put stores the body under key only when it ends with the trailer's sha256: a body cut short
// (the client's reader failed, or the connection dropped at a chunk boundary) leaves nothing.
func (s *server) put(w http.ResponseWriter, r *http.Request, key string) {
	body := &checkedBody{r: r.Body, req: r, h: sha256.New()}
	if err := s.b.Put(r.Context(), key, body); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkedBody hashes what it reads and, at the end of the body, replaces io.EOF with an error
// unless the request's sha256 trailer matches.
type checkedBody struct {
	r   io.Reader
	req *http.Request
	h   hash.Hash
}

// errChecksum is returned at the end of a body whose trailer is missing or does not match.
var errChecksum = errors.New("the body does not match its " + SHA256Trailer + " trailer")

func (c *checkedBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		want := c.req.Trailer.Get(SHA256Trailer)
		if got := hex.EncodeToString(c.h.Sum(nil)); want == "" || got != want {
			return n, fmt.Errorf("%w (trailer %q, body %s)", errChecksum, want, got)
		}
	}
	return n, err
}

// get streams the object, or a part of it, with its length: a stream the server cannot finish
// (the volume failed mid-way, the object was replaced) ends the connection before the promised
// length, which the client reports as an error instead of a shorter object.
func (s *server) get(w http.ResponseWriter, r *http.Request, key string) {
	info, err := s.b.Stat(r.Context(), key)
	if err != nil {
		fail(w, err)
		return
	}
	offset, length, status := int64(0), info.Size, http.StatusOK
	if spec := r.Header.Get("Range"); spec != "" {
		if offset, length, err = parseRange(spec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if offset >= info.Size {
			http.Error(w, fmt.Sprintf("range offset %d not below the size %d", offset, info.Size), http.StatusRequestedRangeNotSatisfiable)
			return
		}
		if length < 0 || offset+length > info.Size {
			length = info.Size - offset
		}
		status = http.StatusPartialContent
	}
	var rc io.ReadCloser
	if status == http.StatusOK {
		rc, err = s.b.Get(r.Context(), key)
	} else {
		rc, err = s.b.GetRange(r.Context(), key, offset, length)
	}
	if err != nil {
		fail(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(status)
	if n, err := io.Copy(w, rc); err != nil || n != length {
		panic(http.ErrAbortHandler) // the client sees a cut connection, never a short object
	}
}

// parseRange reads "bytes=O-E" (E inclusive) or "bytes=O-" into GetRange's offset and length.
func parseRange(spec string) (offset, length int64, err error) {
	from, to, ok := strings.Cut(strings.TrimPrefix(spec, "bytes="), "-")
	if !ok || !strings.HasPrefix(spec, "bytes=") {
		return 0, 0, fmt.Errorf("range %q: want bytes=<first>-[<last>]", spec)
	}
	if offset, err = strconv.ParseInt(from, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("range %q: %w", spec, err)
	}
	length = -1
	if to != "" {
		last, err := strconv.ParseInt(to, 10, 64)
		if err != nil || last < offset {
			return 0, 0, fmt.Errorf("range %q: bad last byte", spec)
		}
		length = last - offset + 1
	}
	return offset, length, backend.ValidateRange(offset, length)
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	infos, err := s.b.List(r.Context(), r.URL.Query().Get("prefix"))
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]listEntry, 0, len(infos))
	for _, i := range infos {
		out = append(out, listEntry{Key: i.Key, Size: i.Size, ModTime: i.ModTime})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// fail answers err with 404 for a missing object, else 500.
func fail(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if backend.IsNotFound(err) {
		status = http.StatusNotFound
	}
	http.Error(w, err.Error(), status)
}
