package retention

import "slices"

// Backups of a cluster of one namespace and name may come from two Kubernetes clusters that
// share a prefix (a fleet with the same layout in every cluster, or a Kubernetes cluster
// rebuilt after a disaster next to the bucket of the old one). Their keys carry the Kubernetes
// cluster's identity (snapshot.ClusterKeyIn); keys written before they did, or by an operator
// that could not read it, carry none and cannot be attributed once a second Kubernetes
// cluster's backups share the prefix.

// ownKube reports whether b, a backup of the cluster being considered, was written in the
// Kubernetes cluster kube: the same identity, or no identity on either side while no backup
// of another Kubernetes cluster (foreign) makes a key without one ambiguous.
func ownKube(b Backup, kube string, foreign bool) bool {
	return b.Kube == kube || (b.Kube == "" && !foreign)
}

// otherKubes returns the distinct Kubernetes cluster identities other than kube that bs
// carry, in order of first appearance.
func otherKubes(bs []Backup, kube string) []string {
	var out []string
	for _, b := range bs {
		if b.Kube != "" && b.Kube != kube && !slices.Contains(out, b.Kube) {
			out = append(out, b.Kube)
		}
	}
	return out
}

// PreferKube narrows bs, the backups (newest first) of the cluster a restore wants, to those it
// may choose from when running in the Kubernetes cluster kube ("" unknown):
//   - the backups written in kube, and those without a Kubernetes identity while no other
//     Kubernetes cluster's backups are among bs;
//   - when kube wrote none of them, the backups of the one other Kubernetes cluster (a cluster
//     restored into a rebuilt Kubernetes cluster), with those without an identity;
//   - none when two or more other Kubernetes clusters wrote them: which one is meant cannot be
//     told. kubes then names them.
func PreferKube(bs []Backup, kube string) (picked []Backup, kubes []string) {
	others := otherKubes(bs, kube)
	if len(others) == 0 {
		return bs, nil // this Kubernetes cluster's, and keys without an identity are its earlier ones
	}
	for _, b := range bs {
		if kube != "" && b.Kube == kube {
			picked = append(picked, b)
		}
	}
	switch {
	case len(picked) > 0:
		return picked, nil
	case len(others) == 1:
		return bs, nil
	default:
		return nil, others
	}
}
