// Package kubeid is the identity of the Kubernetes cluster an operator runs in, as backup keys
// record it (snapshot.ClusterKeyIn): the first 16 hex digits of the sha256 of the kube-system
// namespace's UID, which Kubernetes sets once when the cluster is made and which is the same
// for every client of that cluster (the identity cluster-api and Velero use for the same
// purpose). An administrator may name the cluster instead (--kubernetes-cluster-id), e.g.
// where the operator may not read namespaces.
package kubeid

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Namespace is the namespace whose UID identifies the Kubernetes cluster.
const Namespace = "kube-system"

// Of returns the identity of a Kubernetes cluster named s (the kube-system UID, or the
// administrator's name for it): the first snapshot.KubeIDDigits hex digits of its sha256.
// Hashing gives every source the shape keys need and keeps the UID itself out of the bucket.
func Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:snapshot.KubeIDDigits]
}

// Lookup returns the identity of the Kubernetes cluster c reads: Of(override) when override is
// set, else Of the kube-system namespace's UID. An operator that may not read that namespace
// (a namespaced install) or a cluster without it gets "" and a nil error: its keys then carry
// no Kubernetes identity, as before (docs/backups.md says what that leaves open). Other errors
// are returned.
func Lookup(ctx context.Context, c client.Reader, override string) (string, error) {
	if override != "" {
		return Of(override), nil
	}
	ns := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: Namespace}, ns)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading namespace %s for the Kubernetes cluster's identity: %w", Namespace, err)
	case ns.UID == "":
		return "", nil
	}
	return Of(string(ns.UID)), nil
}
