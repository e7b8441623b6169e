package kubectletcd

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// redacted replaces every value the report leaves out.
const redacted = "REDACTED"

// lastApplied is kubectl's copy of the applied manifest: it would repeat, unscrubbed, what
// the object's own fields hold scrubbed.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var (
	// sensitiveName matches the name of an environment variable, or the key of an annotation
	// or label, whose value is taken for a credential.
	sensitiveName = regexp.MustCompile(`(?i)(passw|pwd|secret|token|credential|private.?key|api.?key|access.?key|auth|session|cookie|signature)`)

	// scrubbers find credentials inside any string: the object's fields, event messages and log
	// lines. Each keeps what says where the credential was (the URL, the key name).
	scrubbers = []struct {
		re   *regexp.Regexp
		with string
	}{
		// scheme://user:password@host
		{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@`), "${1}" + redacted + "@"},
		// a PEM private key, whole
		{regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`), redacted},
		// password=..., "token": "...", secret_access_key: ..., --password=...; not
		// "secretName: aws" or "SecretNotFound: ...", which name and do not hold.
		{regexp.MustCompile(`(?i)((?:passw(?:or)?d|pwd|secret(?:[-_]?(?:access[-_]?)?key)?|token|api[-_]?key|access[-_]?key(?:[-_]?id)?|credentials?)["']?\s*[:=]\s*["']?)[^\s"',;&}]+`), "${1}" + redacted},
		// Authorization: Bearer ...
		{regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+`), "${1}" + redacted},
		// AWS access key IDs
		{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), redacted},
	}
)

// scrub replaces the credentials scrubbers find in s.
func scrub(s string) string {
	for _, r := range scrubbers {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// redactedYAML renders objs as one YAML list, each scrubbed by redactObject.
func redactedYAML(objs []runtime.Object) ([]byte, error) {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		m, err := redactObject(o)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	return b, nil
}

// redactObject is obj as a map without managedFields, with last-applied-configuration and the
// values of sensitive environment variables, annotations and labels REDACTED, and every other
// string scrubbed.
func redactObject(obj runtime.Object) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		for _, k := range []string{"annotations", "labels"} {
			if m, ok := md[k].(map[string]any); ok {
				for key := range m {
					if key == lastApplied || sensitiveName.MatchString(key) {
						m[key] = redacted
					}
				}
			}
		}
	}
	return redactValue(u).(map[string]any), nil
}

// redactValue walks v: a map with a string name and value (an environment variable, an
// etcdEnv entry) has its value REDACTED when the name is sensitive; every string is scrubbed.
func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		name, hasName := t["name"].(string)
		_, hasValue := t["value"].(string)
		for k, e := range t {
			t[k] = redactValue(e)
		}
		if hasName && hasValue && sensitiveName.MatchString(name) {
			t["value"] = redacted
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = redactValue(e)
		}
		return t
	case string:
		return scrub(t)
	default:
		return v
	}
}

// secretNames collects the names of the Secrets objs refer to (storage blocks' <x>Secret,
// secretName, secretKeyRef and secretRef, TLS blocks' <x>Secret): the report lists them, and
// never reads a Secret.
func secretNames(objs []runtime.Object) []string {
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				switch s, isString := e.(string); {
				case isString && s != "" && (k == "secretName" || strings.HasSuffix(k, "Secret")):
					seen[s] = true
				case k == "imagePullSecrets":
					if l, ok := e.([]any); ok {
						for _, r := range l {
							if m, ok := r.(map[string]any); ok {
								if n, ok := m["name"].(string); ok && n != "" {
									seen[n] = true
								}
							}
						}
					}
				case k == "secretKeyRef" || k == "secretRef":
					if m, ok := e.(map[string]any); ok {
						if n, ok := m["name"].(string); ok && n != "" {
							seen[n] = true
						}
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	for _, o := range objs {
		if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o); err == nil {
			walk(u)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
