package backuptarget

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestNamespacedEndpoints: an EtcdBackup in namespace team-a reaches only team-a's Services and
// pods (or what the administrator listed), however the name is written.
func TestNamespacedEndpoints(t *testing.T) {
	allowed := []string{"etcd-0.infra.example", "10.0.0.*:2379"}
	for _, tc := range []struct {
		endpoint, want, reason string
	}{
		// The coreos form: a Service name, resolved in the backup's namespace (before: in the
		// operator's, through its DNS search path).
		{"http://db-client:2379", "http://db-client.team-a.svc:2379", ""},
		{"http://db-client.team-a:2379", "http://db-client.team-a.svc:2379", ""},
		{"https://db-client.team-a.svc:2379", "https://db-client.team-a.svc:2379", ""},
		{"http://db-0.db.team-a.svc.cluster.local:2379", "http://db-0.db.team-a.svc.cluster.local:2379", ""},
		{"http://db-client.team-b.svc:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://db-client.team-b:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://db-0.db.team-b.svc.cluster.local:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://etcd.kube-system.svc:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://10.244.0.17:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://127.0.0.1:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://[::1]:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		// An outside name that would resolve to anything, e.g. a DNS name pointing at a pod IP.
		{"http://db.team-a.svc.attacker.example:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		{"http://etcd.example.com:2379", "", etcdv1beta2.ReasonEndpointNotAllowed},
		// Listed by the administrator: as written.
		{"https://etcd-0.infra.example:2379", "https://etcd-0.infra.example:2379", ""},
		{"http://10.0.0.5:2379", "http://10.0.0.5:2379", ""},
		{"http://10.0.0.5:2380", "", etcdv1beta2.ReasonEndpointNotAllowed},
	} {
		got, err := namespacedEndpoints("team-a", []string{tc.endpoint}, allowed)
		if reason.Of(err) != tc.reason || (err == nil && got[0] != tc.want) {
			t.Errorf("%s: %v, %v; want %q, reason %q", tc.endpoint, got, err, tc.want, tc.reason)
		}
	}
}
