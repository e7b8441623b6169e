package crdvalidation

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	crd "github.com/etcd-operator/etcd-operator/manifests/crd"
)

// fieldPath is a field of one of the kinds as the docs write it, in backticks: `spec.x.y` or
// `status.x`.
var fieldPath = regexp.MustCompile("`((?:spec|status)(?:\\.[A-Za-z][A-Za-z0-9]*)+)`")

// notOurs are field paths the docs name that are no field of this project's kinds, and why.
var notOurs = map[string]string{
	"spec.nodeName":     "a Pod's field",
	"spec.wait":         "a Flux Kustomization's field (docs/gitops.md)",
	"spec.healthChecks": "a Flux Kustomization's field (docs/gitops.md)",
}

// TestDocsNameOnlyFieldsThatExist (issue 33 item 5): every `spec...` or `status...` path the
// README and docs/ write in backticks is a field of EtcdCluster, EtcdBackup, EtcdRestore or
// EtcdBackupSchedule (in the generated CRDs' schemas), or is listed in notOurs with the reason:
// a renamed or removed field cannot linger in a runbook.
func TestDocsNameOnlyFieldsThatExist(t *testing.T) {
	var schemas []*apiextensionsv1.JSONSchemaProps
	entries, err := crd.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := crd.Files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, v := range c.Spec.Versions {
			schemas = append(schemas, v.Schema.OpenAPIV3Schema)
		}
	}
	if len(schemas) != 4 {
		t.Fatalf("%d CRD schemas, want 4", len(schemas))
	}

	checked := 0
	for rel, text := range testutil.Docs(t) {
		if rel == filepath.Join("docs", "api-reference.md") { // generated from the API types
			continue
		}
		for _, m := range fieldPath.FindAllStringSubmatch(text, -1) {
			path := m[1]
			if _, ok := notOurs[path]; ok {
				continue
			}
			checked++
			found := false
			for _, s := range schemas {
				found = found || hasPath(s, strings.Split(path, "."))
			}
			if !found {
				t.Errorf("%s names `%s`, which is no field of the project's kinds", rel, path)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d field paths in the docs: is the pattern still right?", checked)
	}
}

// hasPath: path is a field of the object schema s (into arrays' items and maps' values; any
// path below a field that keeps unknown fields).
func hasPath(s *apiextensionsv1.JSONSchemaProps, path []string) bool {
	for _, name := range path {
		for s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
			return true
		}
		if p, ok := s.Properties[name]; ok {
			s = &p
			continue
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			s = s.AdditionalProperties.Schema
			continue
		}
		return false
	}
	return true
}
