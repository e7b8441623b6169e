// Command registry is a minimal OCI distribution registry (go-containerregistry's pkg/registry,
// blobs and manifests in memory) for tests: `make push` pushes to it and the local cluster's
// containerd pulls from it over plain HTTP (hack/local-cluster/containerd.toml, certs.d).
//
//	registry -addr 10.244.0.1:5001
//
// It serves until SIGTERM or SIGINT. Listen on loopback or the local cluster's bridge only: it
// has no authentication.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5001", "host:port to listen on")
	quiet := flag.Bool("quiet", false, "do not log requests")
	flag.Parse()
	if err := run(*addr, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(addr string, quiet bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var opts []registry.Option
	if quiet {
		opts = append(opts, registry.Logger(log.New(discard{}, "", 0)))
	}
	srv := &http.Server{Handler: registry.New(opts...), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("serving on %s\n", l.Addr())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
