// Package testutil starts the real kube-apiserver and etcd of envtest for integration tests,
// with the binaries the project builds itself (hack/envtest-assets.sh), and holds test builders.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/manager"
)

// RepoRoot is the root of the repository this file is in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AssetsDir returns the directory with kube-apiserver and etcd for envtest: KUBEBUILDER_ASSETS
// if set, otherwise what hack/envtest-assets.sh prints (it builds them on first use).
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command(filepath.Join(RepoRoot(), "hack", "envtest-assets.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("building envtest binaries with hack/envtest-assets.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Env is a running envtest control plane with the project's CRDs installed.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// StartEnv starts kube-apiserver and etcd and installs the CRDs from manifests/crd.
func StartEnv() (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "manifests", "crd")},
		ErrorIfCRDPathMissing: true,
		// Not envtest's 20 s: make test runs packages side by side, and a package's
		// kube-apiserver may start while another builds or starts its own.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{env: env, Config: cfg, Client: c}, nil
}

// EtcdURL is the client URL of the control plane's etcd.
func (e *Env) EtcdURL() string { return e.env.ControlPlane.Etcd.URL.String() }

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// KubeconfigFile writes a kubeconfig for an admin user of the control plane and returns its path.
func (e *Env) KubeconfigFile(dir string) (string, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding envtest user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	return path, nil
}
