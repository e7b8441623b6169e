//go:build e2e

// Package release tests the path a user takes to get the operators onto a cluster: `make push`
// of the multi-arch image to a registry, and the cluster's nodes pulling it from there.
package release

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// defaultRegistry is where hack/local-cluster.sh lets containerd pull over plain HTTP
// (LC_REGISTRY: the bridge address, port 5001); E2E_REGISTRY overrides it.
const defaultRegistry = "10.244.0.1:5001"

// TestPushAndPull starts a registry (hack/tools/registry, go-containerregistry's) on the bridge,
// pushes the operator image index there with `hack/images.sh push` (what `make push` runs),
// checks the index holds linux/amd64 and linux/arm64, and runs each operator binary of it in a
// pod with imagePullPolicy Always: the node pulls the image from the registry, the pod's image
// ID is the pushed digest, and --version prints the stamped version and commit.
func TestPushAndPull(t *testing.T) {
	f := framework.Global(t)
	addr := os.Getenv("E2E_REGISTRY")
	if addr == "" {
		addr = defaultRegistry
	}
	startRegistry(t, f.RootDir, addr)

	version := "v0.0.0-e2e" + rand.String(5)
	img := addr + "/etcd-operator:" + strings.TrimPrefix(version, "v")
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), filepath.Join(f.RootDir, "hack", "images.sh"), "push")
	cmd.Env = append(os.Environ(), "IMG="+img, "VERSION="+version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/images.sh push: %v\n%s", err, out)
	}
	t.Logf("pushed %s in %s", img, time.Since(start).Round(time.Second))
	digest := checkIndex(t, addr, "etcd-operator", strings.TrimPrefix(version, "v"))

	ns := f.CreateNamespace(t, "release")
	for _, bin := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: bin + "-version", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name: "version", Image: img, ImagePullPolicy: corev1.PullAlways,
					Command: []string{"/usr/local/bin/" + bin, "--version"},
				}},
			},
		}
		f.Create(t, pod)
	}
	for _, bin := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		pod := f.WaitForPodSucceeded(t, ns, bin+"-version", 3*time.Minute)
		if id := pod.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(id, "@"+digest) || !strings.HasPrefix(id, addr+"/") {
			t.Errorf("%s ran image %q, want %s/etcd-operator@%s", bin, id, addr, digest)
		}
		logs, err := f.Clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := bin + " " + version + " commit "
		if !strings.HasPrefix(string(logs), want) || !strings.Contains(string(logs), "linux/amd64") {
			t.Errorf("%s --version printed %q, want %q... linux/amd64", bin, logs, want)
		}
		t.Logf("%s", strings.TrimSpace(string(logs)))
	}
}

// startRegistry builds hack/tools/registry and runs it on addr until the test ends.
func startRegistry(t *testing.T, root, addr string) {
	t.Helper()
	if l, err := net.Listen("tcp", addr); err != nil {
		t.Fatalf("cannot listen on %s (the local cluster's bridge address? E2E_REGISTRY overrides it): %v", addr, err)
	} else {
		l.Close()
	}
	bin := filepath.Join(t.TempDir(), "registry")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(root, "hack", "tools", "registry")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hack/tools/registry: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-addr", addr, "-quiet")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	framework.Eventually(t, 30*time.Second, "the registry to answer on "+addr, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// checkIndex fetches repo:tag from the registry, checks it is an OCI index with linux/amd64 and
// linux/arm64 images, and returns its digest.
func checkIndex(t *testing.T, addr, repo, tag string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("http://%s/v2/%s/manifests/%s", addr, repo, tag), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var idx struct {
		MediaType string
		Manifests []struct {
			Platform struct{ OS, Architecture string }
		}
	}
	if err := json.Unmarshal(body, &idx); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", req.URL, resp.Status, err, body)
	}
	platforms := map[string]bool{}
	for _, m := range idx.Manifests {
		platforms[m.Platform.OS+"/"+m.Platform.Architecture] = true
	}
	if idx.MediaType != "application/vnd.oci.image.index.v1+json" || !platforms["linux/amd64"] || !platforms["linux/arm64"] {
		t.Fatalf("pushed %s:%s is %s with %v, want an OCI index of linux/amd64 and linux/arm64", repo, tag, idx.MediaType, platforms)
	}
	return resp.Header.Get("Docker-Content-Digest")
}
