// Command backup-operator runs the backup-operator controller manager. See README.md and docs/.
//
// `backup-operator volume-server ...` is not for people: it is the process of the pod that
// serves a backup volume to the operators (package volumeserver), shipped in the same binary so
// the operator image needs nothing else.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	// Public CA roots (Mozilla's, via the Go project) for HTTPS to AWS, GCS and Azure when the
	// system has none, as in the operator image; system roots win where they exist.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/etcd-operator/etcd-operator/internal/controller/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	"github.com/etcd-operator/etcd-operator/internal/manager"
	"github.com/etcd-operator/etcd-operator/internal/volumeserver"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == volumeserver.Command {
		os.Exit(volumeserver.Main(os.Args[2:]))
	}
	os.Exit(manager.Main("backup-operator", os.Args[1:], etcdbackup.Setup, etcdbackup.SetupMetrics,
		etcdbackupschedule.Setup, etcdbackupschedule.SetupMetrics, backupvolume.Setup))
}
