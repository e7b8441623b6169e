// Command backup-operator runs the backup-operator controller manager. See README.md and docs/.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	"github.com/etcd-operator/etcd-operator/internal/manager"
)

func main() {
	os.Exit(manager.Main("backup-operator", os.Args[1:], etcdbackup.Setup, etcdbackupschedule.Setup))
}
