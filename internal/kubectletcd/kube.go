package kubectletcd

import (
	"flag"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/manager"
)

// kubeFlags are the global flags that say which API server, as whom, and which namespace.
type kubeFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

func (k *kubeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kubeconfig context")
	fs.StringVar(&k.namespace, "namespace", "", "namespace (default: the context's)")
	fs.StringVar(&k.namespace, "n", "", "shorthand for --namespace")
}

// config loads the user's kubeconfig, as kubectl does, and returns the namespace to work in.
func (k *kubeFlags) config() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns := k.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("reading the kubeconfig context's namespace: %w", err)
		}
	}
	return cfg, ns, nil
}

// client connects with the user's kubeconfig and returns the namespace to work in.
func (k *kubeFlags) client() (client.Client, string, error) {
	cfg, ns, err := k.config()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return nil, "", fmt.Errorf("creating the API client: %w", err)
	}
	return c, ns, nil
}
