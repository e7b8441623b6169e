//go:build e2e

// Package framework is what the e2e tests of every issue share: it loads the kubeconfig of the
// cluster under test (by default the local cluster of hack/local-cluster.sh), builds a
// controller-runtime client with the project's scheme, and offers a namespace per test with
// cleanup, Eventually-style waits, exec into pods, port-forwards, and dialing pods and services
// by their cluster DNS names from the host.
//
// Environment:
//
//	KUBECONFIG             cluster under test (default <repo>/.cache/local-cluster/kubeconfig)
//	E2E_KUBECTL            kubectl for exec/port-forward (default the one hack/build-k8s.sh built)
//	E2E_CLUSTER_DNS        cluster DNS server reachable from the host (default 10.244.0.1:53)
//	E2E_KEEP_NAMESPACES=1  keep test namespaces for inspection
package framework

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

const (
	// OperatorNamespace is where hack/deploy.sh installs the operators.
	OperatorNamespace = "etcd-operator-system"
	// DefaultClusterDNS is the local cluster's CoreDNS, bound to its bridge address.
	DefaultClusterDNS = "10.244.0.1:53"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
	modulePath    = "github.com/etcd-operator/etcd-operator"
)

// OperatorDeployments are the Deployments of manifests/deploy.
var OperatorDeployments = []string{"etcd-operator", "backup-operator", "restore-operator"}

// Framework holds the clients for the cluster under test.
type Framework struct {
	RootDir    string
	Kubeconfig string
	Config     *rest.Config
	Scheme     *runtime.Scheme
	Client     client.Client
	Clientset  kubernetes.Interface
	// Kubectl is the path of the kubectl used for exec and port-forward.
	KubectlPath string
	// ClusterDNS is host:port of a DNS server that answers cluster names, reachable from the host.
	ClusterDNS string
}

var (
	globalOnce sync.Once
	global     *Framework
	errGlobal  error
)

// Global returns the framework shared by all tests of a test binary; it fails the test when
// the cluster is not reachable.
func Global(t testing.TB) *Framework {
	t.Helper()
	tier(t) // a test the run's tier (E2E_TIER) leaves out is skipped before it does anything
	globalOnce.Do(func() { global, errGlobal = New() })
	if errGlobal != nil {
		t.Fatalf("e2e framework: %v", errGlobal)
	}
	return global
}

// NewScheme returns a scheme with the core Kubernetes types, CustomResourceDefinitions and the
// project's API (etcd.database.coreos.com/v1beta2).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	return s
}

// New loads the kubeconfig and builds the clients.
func New() (*Framework, error) {
	root, err := findRoot()
	if err != nil {
		return nil, err
	}
	f := &Framework{RootDir: root, Scheme: NewScheme(), ClusterDNS: DefaultClusterDNS}
	if v := os.Getenv("E2E_CLUSTER_DNS"); v != "" {
		f.ClusterDNS = v
	}
	f.Kubeconfig = os.Getenv("KUBECONFIG")
	if f.Kubeconfig == "" {
		f.Kubeconfig = filepath.Join(root, ".cache", "local-cluster", "kubeconfig")
	}
	if f.Config, err = clientcmd.BuildConfigFromFlags("", f.Kubeconfig); err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s (is the local cluster up? hack/local-cluster.sh up): %w", f.Kubeconfig, err)
	}
	f.Config.QPS, f.Config.Burst = 50, 100
	if f.Client, err = client.New(f.Config, client.Options{Scheme: f.Scheme}); err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	if f.Clientset, err = kubernetes.NewForConfig(f.Config); err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	if f.KubectlPath, err = findKubectl(root); err != nil {
		return nil, err
	}
	return f, nil
}

// findRoot walks up from the working directory to this module's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod of " + modulePath + ")")
		}
		dir = parent
	}
}

// findKubectl returns $E2E_KUBECTL or the kubectl that hack/build-k8s.sh built (never one
// found on PATH: it is not part of a fresh machine and may not be a plain kubectl).
func findKubectl(root string) (string, error) {
	if k := os.Getenv("E2E_KUBECTL"); k != "" {
		return k, nil
	}
	matches, _ := filepath.Glob(filepath.Join(root, ".cache", "bin", "k8s-*", "kubectl"))
	if len(matches) == 0 {
		return "", errors.New("no kubectl: run hack/build-k8s.sh kubectl or set E2E_KUBECTL")
	}
	sort.Strings(matches)
	return matches[len(matches)-1], nil
}
