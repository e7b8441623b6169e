package restoreboot

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/ownimage"
)

// AgentImage is the image the restore agent's install init container runs: --seed-agent-image, or the
// image of the operator's own container (found through POD_NAME and POD_NAMESPACE), so a
// kustomize or Helm image override needs no second setting.
func AgentImage(ctx context.Context, c client.Reader, opts *options.Options) (string, error) {
	if opts.SeedAgentImage != "" {
		return opts.SeedAgentImage, nil
	}
	return ownimage.Of(ctx, c, "restore-operator", "--seed-agent-image")
}
