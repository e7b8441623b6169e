package restoreboot

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/options"
)

// AgentImage is the image the restore agent's install init container runs: --seed-agent-image, or the
// image of the operator's own container (found through POD_NAME and POD_NAMESPACE), so a
// kustomize or Helm image override needs no second setting.
func AgentImage(ctx context.Context, c client.Reader, opts *options.Options) (string, error) {
	if opts.SeedAgentImage != "" {
		return opts.SeedAgentImage, nil
	}
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return "", errors.New("set --seed-agent-image, or POD_NAME and POD_NAMESPACE from the downward API so the operator can use its own image")
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		return "", fmt.Errorf("reading the operator's own pod %s/%s for its image: %w", ns, name, err)
	}
	for _, ct := range pod.Spec.Containers {
		if len(ct.Command) > 0 && ct.Command[0] == "/usr/local/bin/restore-operator" {
			return ct.Image, nil
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Image, nil
	}
	return "", fmt.Errorf("no container of pod %s/%s runs /usr/local/bin/restore-operator: set --seed-agent-image", ns, name)
}
