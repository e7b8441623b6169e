// Command etcd-operator runs the etcd-operator controller manager. See README.md and docs/.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	// Public CA roots (Mozilla's, via the Go project) for HTTPS to AWS, GCS and Azure when the
	// system has none, as in the operator image; system roots win where they exist.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/manager"
)

func main() {
	os.Exit(manager.Main("etcd-operator", os.Args[1:], etcdcluster.Setup, etcdcluster.SetupMetrics))
}
