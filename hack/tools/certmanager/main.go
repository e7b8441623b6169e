// Command certmanager runs cert-manager's own certificate controllers, built from cert-manager's
// Go module (the release's source), so that the tests of the etcd operator's TLS.certManager
// mode meet a real cert-manager without pulling its images: the Issuer and ClusterIssuer
// controllers with the CA and SelfSigned issuers, the Certificate controllers (trigger, key
// manager, request manager, issuing, readiness, revision manager) and the CertificateRequest
// approver and signers. No webhook (defaulting happens in the controllers), no cainjector, no
// ACME, Vault or Venafi. hack/cert-manager.sh builds it and runs it against a cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"         // registers the CA issuer
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned" // registers the SelfSigned issuer
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// controllers are the control loops this build runs, by cert-manager's names.
var controllers = []string{
	issuers.ControllerName, clusterissuers.ControllerName,
	trigger.ControllerName, keymanager.ControllerName, requestmanager.ControllerName,
	issuing.ControllerName, readiness.ControllerName, revisionmanager.ControllerName,
	approver.ControllerName, crca.CRControllerName, crselfsigned.CRControllerName,
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "certmanager:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuers' Secrets")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "certmanager")

	opts := controller.ContextOptions{Kubeconfig: *kubeconfig}
	opts.ClusterResourceNamespace = *clusterNS
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	known := controller.Known()
	var loops []controller.Interface
	for _, name := range controllers {
		newLoop, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		loop, err := newLoop(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		loops = append(loops, loop)
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.SharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	errs := make(chan error, len(loops))
	for i, loop := range loops {
		wg.Go(func() {
			if err := loop.Run(2, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", controllers[i], err)
				stop()
			}
		})
	}
	fmt.Fprintf(os.Stderr, "certmanager: %d controllers running\n", len(loops))
	wg.Wait()
	close(errs)
	return <-errs
}
