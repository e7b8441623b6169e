// Package volumeserver is `backup-operator volume-server`: the process of the short-lived pod
// that mounts a backup PersistentVolumeClaim and serves it to the operators with
// pkg/backend/volume (storageType PVC; the backup operator's internal/controller/backupvolume
// runs the pod). It serves the local provider rooted at the mount over HTTPS with the
// certificate and key it is given (the clients pin that certificate), asks for the bearer token
// read from a file (a mounted Secret, never a flag or the environment), and with --idle-timeout
// exits by itself once no request has come for that long.
package volumeserver

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// Command is the first argument that turns the backup-operator binary into the volume server.
const Command = "volume-server"

// Options of the server.
type Options struct {
	// Dir is the mounted volume's directory the objects live under.
	Dir string
	// TokenFile holds the bearer token (surrounding white space ignored).
	TokenFile string
	// Listen is the address to serve on.
	Listen string
	// CertFile and KeyFile are the PEM certificate and key to serve HTTPS with; empty: plain
	// HTTP (tests only).
	CertFile, KeyFile string
	// IdleTimeout ends the server after this long without a request (none in flight); 0: never
	// (the controller deletes the pod once nothing names the claim).
	IdleTimeout time.Duration
}

// Main parses args and serves until the idle timeout or a signal; it returns the exit code.
func Main(args []string) int {
	o, err := parse(args, os.Stderr)
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := Serve(ctx, o, nil, log); err != nil {
		log.Error("volume server failed", "error", err)
		return 1
	}
	return 0
}

func parse(args []string, out io.Writer) (Options, error) {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(out)
	var o Options
	fs.StringVar(&o.Dir, "dir", "/backups", "directory of the mounted volume that holds the objects")
	fs.StringVar(&o.TokenFile, "token-file", "", "file with the bearer token clients must present (required)")
	fs.StringVar(&o.Listen, "listen", ":8080", "address to serve on")
	fs.StringVar(&o.CertFile, "cert-file", "", "PEM certificate to serve HTTPS with (with --key-file)")
	fs.StringVar(&o.KeyFile, "key-file", "", "PEM key of --cert-file")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 0, "exit after this long without a request (0: never)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.TokenFile == "" || o.IdleTimeout < 0 || (o.CertFile == "") != (o.KeyFile == "") || fs.NArg() != 0 {
		err := errors.New("usage: backup-operator volume-server --token-file <file> [--cert-file <pem> --key-file <pem>] [--dir /backups] [--listen :8080] [--idle-timeout 10m]")
		fmt.Fprintln(out, err)
		return o, err
	}
	return o, nil
}

// Serve serves o.Dir until ctx ends or no request has come for o.IdleTimeout. ln, when not nil,
// is used instead of listening on o.Listen (tests).
func Serve(ctx context.Context, o Options, ln net.Listener, log *slog.Logger) error {
	raw, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return fmt.Errorf("reading the token: %w", err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return fmt.Errorf("the token file %s is empty", o.TokenFile)
	}
	b, err := local.New(ctx, local.Config{Dir: o.Dir})
	if err != nil {
		return err
	}
	defer b.Close()
	if ln == nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", o.Listen); err != nil {
			return err
		}
	}
	var inFlight atomic.Int64
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	h := volume.Handler(b, token)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inFlight.Add(1)
			defer func() {
				last.Store(time.Now().UnixNano())
				inFlight.Add(-1)
			}()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	if o.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return fmt.Errorf("loading the certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13})
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("serving", "dir", o.Dir, "address", ln.Addr().String(), "tls", o.CertFile != "", "idleTimeout", o.IdleTimeout)
	tick := time.NewTicker(time.Second)
	if o.IdleTimeout > 0 {
		tick.Reset(min(o.IdleTimeout/4, time.Second))
	}
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return shutdown(srv, log, "signal")
		case <-tick.C:
			if o.IdleTimeout > 0 && inFlight.Load() == 0 && time.Since(time.Unix(0, last.Load())) >= o.IdleTimeout {
				return shutdown(srv, log, "idle")
			}
		}
	}
}

func shutdown(srv *http.Server, log *slog.Logger, why string) error {
	log.Info("stopping", "reason", why)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}
