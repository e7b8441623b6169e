package integration

import (
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRestoreOperatorWritesNoMember (issue 28): the restore operator's generated role grants no
// verb that writes a pod or a volume (the etcd operator alone makes, changes and deletes
// members, also for a restore): its check runs as a Job, whose pod it only reads.
func TestRestoreOperatorWritesNoMember(t *testing.T) {
	raw, err := os.ReadFile("../../manifests/rbac/restore-operator/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list", "watch"}
	var jobs bool
	for _, rule := range role.Rules {
		if !slices.Contains(rule.APIGroups, "") && !slices.Contains(rule.APIGroups, "*") {
			jobs = jobs || slices.Contains(rule.APIGroups, "batch") && slices.Contains(rule.Resources, "jobs")
			continue
		}
		for _, res := range rule.Resources {
			if res != "pods" && res != "persistentvolumeclaims" && res != "*" && res != "pods/eviction" {
				continue
			}
			for _, verb := range rule.Verbs {
				if !slices.Contains(read, verb) {
					t.Errorf("the restore operator may %s %s", verb, res)
				}
			}
		}
	}
	if !jobs {
		t.Error("no rule for the check's Jobs")
	}
}
