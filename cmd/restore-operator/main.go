// Command restore-operator runs the restore-operator controller manager. See README.md and docs/.
//
// `restore-operator seed ...` is not for people: it is the agent the restore operator runs in the
// init containers of a restore's seed member pod (package restoreseed), shipped in the same
// binary so the operator image needs nothing else.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	// Public CA roots (Mozilla's, via the Go project) for HTTPS to AWS, GCS and Azure when the
	// system has none, as in the operator image; system roots win where they exist.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/manager"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == restoreseed.Command {
		os.Exit(restoreseed.Main(os.Args[2:]))
	}
	os.Exit(manager.Main("restore-operator", os.Args[1:], etcdrestore.Setup, etcdrestore.SetupMetrics))
}
