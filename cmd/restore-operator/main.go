// Command restore-operator runs the restore-operator controller manager. See README.md and docs/.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/manager"
)

func main() {
	os.Exit(manager.Main("restore-operator", os.Args[1:], etcdrestore.Setup))
}
