package kubectletcd

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// bundle is a support bundle being assembled: its files, in order, under dir in the archive.
type bundle struct {
	dir     string
	files   []bundleFile
	notes   []string
	secrets []string
	now     time.Time
}

// bundleFile is one file of the bundle and what it holds.
type bundleFile struct {
	name, what string
	count      int
	data       []byte
}

// redactionRules is the README's account of what the bundle leaves out.
const redactionRules = `Redaction: no Secret is read or included; only the names of the Secrets the objects refer to
(listed below and in secret-names.txt). In every object, managedFields are dropped;
kubectl.kubernetes.io/last-applied-configuration, the values of environment variables (and
etcdEnv entries) and of annotations and labels whose name looks like a credential (password,
secret, token, key, auth, credential, ...) read REDACTED; in every string, event message and log
line, URL passwords (scheme://user:REDACTED@), PEM private keys, password=/token:/secret=-style
values, bearer tokens and AWS access key IDs are replaced by REDACTED.
`

// filterObjs returns pointers to the items keep accepts, as runtime.Objects.
func filterObjs[T any, P interface {
	*T
	client.Object
}](items []T, keep func(client.Object) bool) []runtime.Object {
	var out []runtime.Object
	for i := range items {
		if o := P(&items[i]); keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// ptrs returns pointers to items as runtime.Objects.
func ptrs[T any, P interface {
	*T
	client.Object
}](items []T) []runtime.Object {
	return filterObjs[T, P](items, func(client.Object) bool { return true })
}

// addObjects adds objs, redacted, as one YAML list.
func (b *bundle) addObjects(c client.Client, name, what string, objs []runtime.Object) error {
	for _, o := range objs {
		if gvk, err := apiutil.GVKForObject(o, c.Scheme()); err == nil {
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	data, err := redactedYAML(objs)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b.files = append(b.files, bundleFile{name: name, what: what, count: len(objs), data: data})
	return nil
}

// addLog adds the last lines of a container's log, each line scrubbed.
func (b *bundle) addLog(ctx context.Context, logs PodLogs, name, ns, pod, container string, lines int64, previous bool) error {
	rc, err := logs(ctx, ns, pod, container, lines, previous)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	var buf bytes.Buffer
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		buf.WriteString(scrub(sc.Text()))
		buf.WriteByte('\n')
		n++
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(&buf, "[log cut short: %s]\n", scrub(err.Error()))
	}
	what := fmt.Sprintf("log of %s/%s container %s, last %d lines", ns, pod, container, lines)
	if previous {
		what = fmt.Sprintf("log of %s/%s container %s before its last restart, last %d lines", ns, pod, container, lines)
	}
	b.files = append(b.files, bundleFile{name: name, what: what, count: n, data: buf.Bytes()})
	return nil
}

// note records what could not be collected, for the README and the command's output.
func (b *bundle) note(format string, args ...any) {
	b.notes = append(b.notes, scrub(fmt.Sprintf(format, args...)))
}

// readme puts README.txt and secret-names.txt first: what was collected, how it was
// redacted, and what could not be collected.
func (b *bundle) readme(c *etcdv1beta2.EtcdCluster, now time.Time) {
	b.now = now
	var w strings.Builder
	fmt.Fprintf(&w, "Support bundle of EtcdCluster %s/%s, written by kubectl etcd report at %s.\n\n", c.Namespace, c.Name, now.UTC().Format(time.RFC3339))
	w.WriteString("Files:\n")
	for _, f := range b.files {
		fmt.Fprintf(&w, "  %s: %s (%d)\n", f.name, f.what, f.count)
	}
	fmt.Fprintf(&w, "\n%s\nSecrets referenced (names only):\n", redactionRules)
	for _, s := range b.secrets {
		fmt.Fprintf(&w, "  %s\n", s)
	}
	if len(b.secrets) == 0 {
		w.WriteString("  (none)\n")
	}
	if len(b.notes) > 0 {
		w.WriteString("\nNot collected:\n")
		for _, n := range b.notes {
			fmt.Fprintf(&w, "  %s\n", n)
		}
	}
	names := strings.Join(b.secrets, "\n")
	if names != "" {
		names += "\n"
	}
	b.files = append([]bundleFile{
		{name: "README.txt", what: "what this bundle holds, how it was redacted, what could not be collected", count: 1, data: []byte(w.String())},
		{name: "secret-names.txt", what: "names of the Secrets the objects refer to (no data)", count: len(b.secrets), data: []byte(names)},
	}, b.files...)
}

// write writes the bundle as a tar.gz at path, through a temporary file next to it so that a
// failed write leaves no partial bundle.
func (b *bundle) write(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	for _, f := range b.files {
		hdr := &tar.Header{Name: b.dir + "/" + f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: b.now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	for _, cl := range []io.Closer{tw, gz, tmp} {
		if err := cl.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// print lists what the bundle at path contains.
func (b *bundle) print(w io.Writer, path string) {
	var size int
	for _, f := range b.files {
		size += len(f.data)
	}
	fmt.Fprintf(w, "wrote %s: %d files, %s before compression, redacted (no Secret data)\n", path, len(b.files), byteSize(int64(size)))
	tw := table(w)
	for _, f := range b.files {
		fmt.Fprintf(tw, "  %s/%s\t%s\t%s (%d)\n", b.dir, f.name, byteSize(int64(len(f.data))), f.what, f.count)
	}
	_ = tw.Flush()
	for _, n := range b.notes {
		fmt.Fprintf(w, "not collected: %s\n", n)
	}
}
