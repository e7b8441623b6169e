// Package ownimage finds the image an operator runs, read from its own pod, so that pods it
// makes with its own binary (restore steps, backup volume servers) follow a kustomize or Helm
// image override with no second setting.
package ownimage

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Of is the image of the container of the operator's own pod (POD_NAME, POD_NAMESPACE) that
// runs /usr/local/bin/<binary>, or of its only container. flag names the setting that
// overrides it, for the error.
func Of(ctx context.Context, c client.Reader, binary, flag string) (string, error) {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return "", fmt.Errorf("set %s, or POD_NAME and POD_NAMESPACE from the downward API so the operator can use its own image", flag)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		return "", fmt.Errorf("reading the operator's own pod %s/%s for its image: %w", ns, name, err)
	}
	for _, ct := range pod.Spec.Containers {
		if len(ct.Command) > 0 && ct.Command[0] == "/usr/local/bin/"+binary {
			return ct.Image, nil
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Image, nil
	}
	return "", errors.New("no container of pod " + ns + "/" + name + " runs /usr/local/bin/" + binary + ": set " + flag)
}
