package crdvalidation

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/testutil"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testutil.Namespace(t, env.Client, "crdv")
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
