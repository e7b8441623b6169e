// Package member builds the Kubernetes objects of one etcd member: its pod (identity by
// hostname and subdomain, DNS-name peer and client URLs, flags, TLS volumes, probes) and its data
// volume claim. The etcd operator makes every member with it, and the restore operator makes
// the seed member of a restore with it, so the cluster operator adopts a pod of the same shape.
package member
