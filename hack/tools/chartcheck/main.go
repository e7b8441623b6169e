// Command chartcheck fails when a Deployment rendered by the Helm chart runs its operator
// differently from manifests/deploy: same pod security context, volumes, and container
// (command, args, env, ports, probes, resources, security context, mounts). Names, labels, the
// ServiceAccount name and the image may differ (they are release- and value-dependent).
//
//	chartcheck <helm template output> manifests/deploy/*.yaml
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"
)

const nameLabel = "app.kubernetes.io/name"

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: chartcheck <rendered chart> <manifests/deploy files...>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
}

func run(rendered string, manifests []string) error {
	chart, err := deployments(rendered)
	if err != nil {
		return err
	}
	want := map[string]*appsv1.Deployment{}
	for _, m := range manifests {
		ds, err := deployments(m)
		if err != nil {
			return err
		}
		for k, v := range ds {
			want[k] = v
		}
	}
	if len(want) == 0 {
		return errors.New("no Deployments in " + strings.Join(manifests, " "))
	}
	var errs []error
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		got, ok := chart[n]
		if !ok {
			errs = append(errs, fmt.Errorf("the chart renders no Deployment for %s", n))
			continue
		}
		a, b := normalise(want[n]), normalise(got)
		if !equality.Semantic.DeepEqual(a, b) {
			errs = append(errs, fmt.Errorf("%s: the chart's pod spec differs from manifests/deploy (- manifests, + chart):\n%s", n, diff.ObjectReflectDiff(a, b)))
		}
	}
	return errors.Join(errs...)
}

// deployments reads the Deployments of a multi-document YAML file, keyed by their
// app.kubernetes.io/name label.
func deployments(path string) (map[string]*appsv1.Deployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]*appsv1.Deployment{}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if meta.Kind != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(doc, d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[d.Labels[nameLabel]] = d
	}
	return out, nil
}

// normalise keeps what must be equal: the pod spec without the ServiceAccount name and the
// container images.
func normalise(d *appsv1.Deployment) any {
	spec := d.Spec.Template.Spec.DeepCopy()
	spec.ServiceAccountName = ""
	for i := range spec.Containers {
		spec.Containers[i].Image = ""
	}
	return struct {
		Replicas *int32
		Strategy appsv1.DeploymentStrategy
		Pod      any
	}{d.Spec.Replicas, d.Spec.Strategy, spec}
}
