// Command kubectl-etcd is a kubectl plugin (`kubectl etcd ...`) for the day-two actions on the
// clusters this project's operators run: status, backups, restores, drills, defragmentation
// and support bundles. See docs/kubectl-etcd.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Public CA roots for HTTPS to AWS, GCS and Azure when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectletcd.New(os.Stdin, os.Stdout, os.Stderr).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
