package manager

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/manifests/crd"
)

// crdEstablishTimeout bounds the wait for installed CRDs to be served.
const crdEstablishTimeout = 60 * time.Second

// InstallCRDs creates or updates the embedded CRDs with server-side apply and waits until they
// are Established. The binaries need the extra RBAC of manifests/rbac/crd-installer for it.
func InstallCRDs(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating client to install CRDs: %w", err)
	}
	crds, err := EmbeddedCRDs()
	if err != nil {
		return err
	}
	for _, obj := range crds {
		obj.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		obj.ManagedFields = nil
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("etcd-operator-suite"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", obj.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		for _, want := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				return false, nil //nolint:nilerr // not visible yet: keep polling until the timeout.
			}
			if !isEstablished(got) {
				return false, nil
			}
		}
		return true, nil
	})
}

// EmbeddedCRDs decodes the CRDs embedded in the binary.
func EmbeddedCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crd.Files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := crd.Files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", name, err)
		}
		obj := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", name, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

func isEstablished(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
