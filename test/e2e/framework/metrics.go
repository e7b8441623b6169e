//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// MetricsReaderRole is the ClusterRole the kustomize install ships for reading the operators'
// /metrics (manifests/deploy/metrics-reader.yaml); a Helm release's is <release>-metrics-reader.
const MetricsReaderRole = "etcd-operator-metrics-reader"

// MetricsToken returns a token of a new service account in ns bound to clusterRole, as
// Prometheus would scrape the operators' secure /metrics with. The binding goes with the test.
func (f *Framework) MetricsToken(t testing.TB, ns, clusterRole string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "metrics-scraper-"}}
	if err := f.Client.Create(ctx, sa); err != nil {
		t.Fatalf("creating the scraper's service account: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + sa.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}}
	if err := f.Client.Create(ctx, binding); err != nil {
		t.Fatalf("binding %s: %v", clusterRole, err)
	}
	t.Cleanup(func() { _ = f.Client.Delete(context.Background(), binding) })
	// The operators ask the API server whether a scraper may GET /metrics and keep a "no" for
	// 30 s (controller-runtime's DenyCacheTTL). The API server's RBAC authorizer learns of the
	// binding through a watch, so a scrape at once can be refused and then refused from that
	// cache for longer than a test waits: scrape only once the API server itself says yes.
	user := "system:serviceaccount:" + ns + ":" + sa.Name
	Eventually(t, time.Minute, user+" may GET /metrics", func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := f.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
	})
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := f.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, sa.Name, err)
	}
	return tr.Status.Token
}

// ScrapeMetrics reads the operators' secure /metrics at https://addr with the bearer token
// (their certificate is self-signed), through the framework's dialer (pod IPs included).
func (f *Framework) ScrapeMetrics(ctx context.Context, addr, token string) (string, error) {
	return scrape(ctx, addr, token, &http.Transport{DialContext: f.DialContext})
}

func scrape(ctx context.Context, addr, token string, transport *http.Transport) (string, error) {
	if transport == nil {
		transport = &http.Transport{}
	}
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the operators' self-signed metrics certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET https://%s/metrics: HTTP %d: %.200s", addr, resp.StatusCode, body)
	}
	return string(body), nil
}
