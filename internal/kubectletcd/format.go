package kubectletcd

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// table writes tab-separated rows as aligned columns, as kubectl get does.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// age is how long before now t was, in kubectl's short form (5m, 3h12m, 2d); "-" for nil.
func age(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// stamp is t in UTC RFC 3339; "-" for nil.
func stamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// byteSize renders n in binary units (1.5 MiB).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// outputFlag adds -o/--output to fs: empty for text, or json or yaml for an object on Out
// (progress then goes to Err, so that Out parses).
func outputFlag(fs *flag.FlagSet) *string {
	o := fs.String("output", "", "json or yaml: print the outcome as an object (progress goes to stderr)")
	fs.StringVar(o, "o", "", "shorthand for --output")
	return o
}

// progress is where a command with -o prints its progress: Out for text, Err for an object on
// Out.
func (a *App) progress(output string) io.Writer {
	if output != "" {
		return a.Err
	}
	return a.Out
}

// checkOutput refuses an -o value other than json and yaml.
func (a *App) checkOutput(cmd, o string) error {
	if o != "" && o != "json" && o != "yaml" {
		return a.usageError(fmt.Sprintf("%s: -o %q: want json or yaml", cmd, o))
	}
	return nil
}

// writeAPIObject prints obj of this API group as the API returns it, its kind and apiVersion set
// and without managedFields, as JSON or YAML; an obj that finished Failed is errOutcome once
// printed (the exit code says it, stdout still parses).
func writeAPIObject(w io.Writer, format string, obj client.Object, kind string, failed bool) error {
	obj.GetObjectKind().SetGroupVersionKind(etcdv1beta2.GroupVersion.WithKind(kind))
	obj.SetManagedFields(nil)
	if err := writeObject(w, format, obj); err != nil {
		return err
	}
	if failed {
		return errOutcome
	}
	return nil
}

// writeObject prints v as JSON (indented) or YAML.
func writeObject(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}
