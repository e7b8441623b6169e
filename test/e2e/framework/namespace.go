//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLabel marks every namespace the framework creates, with the test's name as value.
const TestLabel = "e2e.etcd.database.coreos.com/test"

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// CreateNamespace creates a namespace named e2e-<base>-<random> for one test. On cleanup it
// keeps the namespace's pods, events and logs when the test failed (DumpNamespace), then
// deletes it (unless E2E_KEEP_NAMESPACES=1).
func (f *Framework) CreateNamespace(t testing.TB, base string) string {
	t.Helper()
	tier(t) // a test the run's tier leaves out is skipped here, before it makes anything
	base = strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return f.createNamespace(t, fmt.Sprintf("e2e-%s-%s", base, rand.String(5)))
}

// CreateNamespaceNamed is CreateNamespace for a namespace whose name is fixed, e.g. one the
// shared operators are deployed to leave alone (--exclude-namespace): a namespace of that name
// left by an earlier run is waited for until it is gone.
func (f *Framework) CreateNamespaceNamed(t testing.TB, name string) string {
	t.Helper()
	tier(t)
	Eventually(t, 3*time.Minute, "namespace "+name+" of an earlier run gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			err = fmt.Errorf("namespace %s still exists", name)
		}
		return false, err
	})
	return f.createNamespace(t, name)
}

func (f *Framework) createNamespace(t testing.TB, name string) string {
	t.Helper()
	label := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(label) > 63 {
		label = strings.Trim(label[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{TestLabel: label},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	t.Logf("namespace %s", ns.Name)
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpNamespace(t, ns.Name)
		}
		if os.Getenv("E2E_KEEP_NAMESPACES") == "1" {
			t.Logf("keeping namespace %s (E2E_KEEP_NAMESPACES=1)", ns.Name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Client.Delete(ctx, ns, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// DumpNamespace keeps what a human needs to debug a failed test: pods with their container
// states, the namespace's events, the tail of every container's log, and the operators' log
// lines that name the namespace. With E2E_DUMP_DIR set (hack/e2e.sh sets .cache/e2e/dumps) it
// goes to <dir>/<namespace>.txt and the test log gets one line, so a failed test's own messages
// stay next to its FAIL line; without it, into the test log.
func (f *Framework) DumpNamespace(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Logf("dump %s: listing pods: %v", ns, err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "===== namespace %s\n", ns)
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s phase=%s ip=%s\n", p.Name, p.Status.Phase, p.Status.PodIP)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s ready=%t restarts=%d state=%+v\n", cs.Name, cs.Ready, cs.RestartCount, cs.State)
		}
	}
	var events corev1.EventList
	if err := f.Client.List(ctx, &events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	tail := int64(50)
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			data, err := f.Clientset.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
			if err != nil {
				fmt.Fprintf(&b, "----- logs %s/%s: %v\n", p.Name, c.Name, err)
				continue
			}
			fmt.Fprintf(&b, "----- logs %s/%s\n%s\n", p.Name, c.Name, data)
		}
	}
	for _, op := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		out, errOut, err := f.Kubectl(ctx, "-n", OperatorNamespace, "logs", "deployment/"+op, "--all-containers", "--tail=-1")
		if err != nil {
			fmt.Fprintf(&b, "----- %s log: %v: %s\n", op, err, errOut)
			continue
		}
		fmt.Fprintf(&b, "----- %s log, the lines that name %s\n", op, ns)
		for line := range strings.Lines(out) {
			if strings.Contains(line, ns) {
				b.WriteString(line)
			}
		}
	}
	dir := os.Getenv("E2E_DUMP_DIR")
	if dir == "" {
		t.Log(b.String())
		return
	}
	path := filepath.Join(dir, ns+".txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("dump %s: %v", ns, err)
		t.Log(b.String())
		return
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Logf("dump %s: %v", ns, err)
		t.Log(b.String())
		return
	}
	t.Logf("namespace %s: %d pods, %d events; its dump is in %s", ns, len(pods.Items), len(events.Items), path)
}
