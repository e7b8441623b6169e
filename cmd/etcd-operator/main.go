// Command etcd-operator runs the etcd-operator controller manager. See README.md and docs/.
package main

import (
	"os"

	_ "time/tzdata" // IANA time zones in images without /usr/share/zoneinfo.

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/manager"
)

func main() {
	os.Exit(manager.Main("etcd-operator", os.Args[1:], etcdcluster.Setup))
}
