package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestSecureMetrics (issue 14 item 4): with --metrics-secure, /metrics answers only over HTTPS and
// only to a caller the API server authenticates and authorizes: no token 401, the token of a
// service account without the metrics-reader role 403, with it 200 and the operator's metrics.
func TestSecureMetrics(t *testing.T) {
	ctx := t.Context()
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-auth-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The ClusterRole the install ships for Prometheus (manifests/deploy/metrics-reader.yaml).
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if err := env.Client.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: sa}}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	prometheus, stranger := token("prometheus"), token("stranger")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns.Name, Name: "prometheus"}}}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}

	op := startOperator(t, "etcd-operator", kubeconfig, "--metrics-secure", "--watch-namespace="+ns.Name)
	url := "https://" + op.metrics + "/metrics"
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		// controller-runtime's filter answers 500 "Authentication failed" when the TokenReview
		// itself errors, as it does for a string that is no token at all.
		{"a string that is no token", "not-a-token", http.StatusInternalServerError},
		{"a service account without the reader role", stranger, http.StatusForbidden},
		{"a service account bound to the reader role", prometheus, http.StatusOK},
	} {
		// RBAC bindings reach the authorizer's cache a moment after they are created.
		var code int
		var body string
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body = get(ctx, t, url, tc.token)
			if code == tc.want || time.Now().After(deadline) {
				break
			}
			time.Sleep(250 * time.Millisecond) //nolint:forbidigo // polling an HTTP endpoint with a deadline
		}
		if code != tc.want {
			t.Errorf("%s: HTTP %d, want %d: %.200s", tc.name, code, tc.want, body)
			continue
		}
		if code == http.StatusOK && !strings.Contains(body, "etcd_operator_build_info") {
			t.Errorf("%s: HTTP 200 without the operator's metrics: %.200s", tc.name, body)
		}
		t.Logf("%s: HTTP %d", tc.name, code)
	}
	// Plain HTTP on the secure port gets nothing.
	if code, _ := getPlain(ctx, "http://"+op.metrics+"/metrics"); code == http.StatusOK {
		t.Error("plain HTTP on the secure metrics port answered 200")
	}
}

func get(ctx context.Context, t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The operator's certificate is self-signed (no --metrics-cert-dir).
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed test certificate
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getPlain(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("plain GET: %w", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
