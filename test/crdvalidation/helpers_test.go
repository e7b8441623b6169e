package crdvalidation

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crdv-%d", nsCounter.Add(1))}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// parse decodes a YAML manifest exactly as a user would send it (no typed round trip that
// could drop or default fields).
func parse(t *testing.T, manifest, ns string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parsing manifest: %v\n%s", err, manifest)
	}
	obj.SetNamespace(ns)
	return obj
}

// expectResult checks err against want: "" means accepted; otherwise err must mention want.
func expectResult(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("expected the manifest to be accepted, got: %v", err)
	case want != "" && err == nil:
		t.Fatalf("expected the manifest to be rejected with %q, it was accepted", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("expected the rejection to say %q, got: %v", want, err)
	}
}
