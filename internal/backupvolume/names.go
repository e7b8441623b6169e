// Package backupvolume names the server that serves a backup PersistentVolumeClaim
// (storageType PVC) and its objects: one Pod, one Service and one Secret per claim, all three
// named Name(claim) and controlled by the claim. The backup operator's controller
// (internal/controller/backupvolume) keeps them while anything names the claim; every operator
// reaches the claim's files through storage.Location, whose Secret is Name(claim).
package backupvolume

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Port is the server's HTTPS port, on the pod and on the Service.
const Port = 8443

// LabelClaim is on the server's Pod (the Service selects it by this label) and Service:
// Name(claim), since a claim's name may be longer than a label value.
const LabelClaim = "etcd.database.coreos.com/backup-volume"

// Name is the name of the Pod, Service and Secret of the server on claim: a DNS-1035 label
// (the Service needs one) whatever the claim's name (up to 253 characters, dots allowed).
func Name(claim string) string {
	sum := sha256.Sum256([]byte(claim))
	return "etcd-backup-volume-" + hex.EncodeToString(sum[:])[:12]
}

// Hosts are the DNS names of the server's Service in namespace, the first the one URL uses.
func Hosts(claim, namespace string) []string {
	n := Name(claim)
	return []string{
		fmt.Sprintf("%s.%s.svc", n, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", n, namespace),
		fmt.Sprintf("%s.%s", n, namespace),
		n,
	}
}

// URL is the server's base URL, the one clients dial.
func URL(claim, namespace string) string {
	return fmt.Sprintf("https://%s:%d", Hosts(claim, namespace)[0], Port)
}
