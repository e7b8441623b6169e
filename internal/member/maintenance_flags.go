package member

import (
	"strconv"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// maintenanceFlags are etcd's backend quota and auto-compaction flags from spec.maintenance,
// with the defaults of MaintenanceSpec. A flag is left out when pod.etcdEnv sets its variable
// (coreos manifests configure them that way), because etcd exits when a flag and its variable
// are both set; admission refuses a spec that sets both explicitly.
func maintenanceFlags(c *etcdv1beta2.EtcdCluster) []string {
	env := map[string]bool{}
	compactionEnv := false
	if c.Spec.Pod != nil {
		for _, e := range c.Spec.Pod.EtcdEnv {
			env[e.Name] = true
			compactionEnv = compactionEnv || strings.HasPrefix(e.Name, "ETCD_AUTO_COMPACTION_")
		}
	}
	m := c.Spec.Maintenance
	if m == nil {
		m = &etcdv1beta2.MaintenanceSpec{}
	}
	var flags []string
	if m.QuotaBackendBytes != nil && !env["ETCD_QUOTA_BACKEND_BYTES"] {
		flags = append(flags, "--quota-backend-bytes="+strconv.FormatInt(m.QuotaBackendBytes.Value(), 10))
	}
	if !compactionEnv {
		mode, retention := etcdv1beta2.AutoCompactionPeriodic, etcdv1beta2.DefaultAutoCompactionRetention
		if ac := m.AutoCompaction; ac != nil {
			if ac.Mode != "" {
				mode = ac.Mode
			}
			if ac.Retention != "" {
				retention = ac.Retention
			}
		}
		flags = append(flags, "--auto-compaction-mode="+strings.ToLower(string(mode)), "--auto-compaction-retention="+retention)
	}
	return flags
}
