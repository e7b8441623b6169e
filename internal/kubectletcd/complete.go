package kubectletcd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// completeCommand answers kubectl's completion of plugins (kubectl 1.26 and later): kubectl runs
// `kubectl_complete-etcd <words typed after "kubectl etcd"> <word being typed>`, which is
// `exec kubectl-etcd __complete "$@"` (the script in the release archive), and reads one
// candidate per line, then `:<directive>` (cobra's protocol).
const completeCommand = "__complete"

// Cobra's completion directives.
const (
	directiveDefault    = 0 // the shell also completes file names
	directiveNoFileComp = 4
)

// commands are the first words, and the words that follow the two-word ones.
var (
	commands    = []string{"status", "backup", "backups", "snapshot", "restore", "drill", "defrag", "rotate-ca", "report", "version"}
	subcommands = map[string]string{"backup": "now", "drill": "now", "snapshot": "download"}
)

// complete prints the candidates for the last of args given the words before it. Errors of the
// API server leave the candidates empty: completion never fails loudly.
func (a *App) complete(ctx context.Context, args []string) error {
	if len(args) == 0 {
		args = []string{""}
	}
	words, partial := args[:len(args)-1], args[len(args)-1]
	candidates, directive := a.candidates(ctx, words, partial)
	for _, c := range candidates {
		if strings.HasPrefix(c, partial) {
			fmt.Fprintln(a.Out, c)
		}
	}
	fmt.Fprintf(a.Out, ":%d\n", directive)
	return nil
}

func (a *App) candidates(ctx context.Context, words []string, partial string) ([]string, int) {
	a.globalsFrom(words)
	var pos []string // the words that are not flags or flag values
	prev := ""
	for i, w := range words {
		if strings.HasPrefix(w, "-") {
			continue
		}
		if i > 0 && takesValue(words[i-1]) {
			continue
		}
		pos = append(pos, w)
	}
	if len(words) > 0 {
		prev = words[len(words)-1]
	}
	// A flag's value.
	switch prev {
	case "-n", "--namespace":
		return a.names(ctx, &corev1.NamespaceList{}, false), directiveNoFileComp
	case "-o", "--output":
		if len(pos) >= 2 && pos[0] == "snapshot" {
			return nil, directiveDefault // snapshot download -o <file>
		}
		return []string{"json", "yaml"}, directiveNoFileComp
	case "-f", "--file", "--kubeconfig":
		return nil, directiveDefault
	case "--schedule":
		return a.names(ctx, &etcdv1beta2.EtcdBackupScheduleList{}, true), directiveNoFileComp
	case "--backup":
		return a.names(ctx, &etcdv1beta2.EtcdBackupList{}, true), directiveNoFileComp
	case "--into", "--context", "--timeout", "--to", "--log-lines", "--operator-namespace", "--kubernetes-cluster-id":
		return nil, directiveNoFileComp
	}
	if len(pos) == 0 {
		if strings.HasPrefix(partial, "-") {
			return []string{"--namespace", "-n", "--kubeconfig", "--context"}, directiveNoFileComp
		}
		return commands, directiveNoFileComp
	}
	cmd := pos[0]
	if sub, ok := subcommands[cmd]; ok && len(pos) == 1 {
		return []string{sub}, directiveNoFileComp
	}
	if strings.HasPrefix(partial, "-") {
		return a.flagsOf(ctx, pos), directiveNoFileComp
	}
	want := 2 // the command and its one argument
	if _, ok := subcommands[cmd]; ok {
		want = 3
	}
	if len(pos) >= want || cmd == "version" {
		return nil, directiveNoFileComp
	}
	if cmd == "snapshot" {
		return a.names(ctx, &etcdv1beta2.EtcdBackupList{}, true), directiveNoFileComp
	}
	return a.names(ctx, &etcdv1beta2.EtcdClusterList{}, true), directiveNoFileComp
}

// takesValue reports whether flag w is followed by its value as the next word.
func takesValue(w string) bool {
	if !strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
		return false
	}
	switch strings.TrimLeft(w, "-") {
	case "yes", "wait", "ambient-credentials", "h", "help":
		return false
	}
	return true
}

// globalsFrom sets the kube flags the words carry, wherever they are.
func (a *App) globalsFrom(words []string) {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.kube.add(fs)
	for i, w := range words {
		name, value, inline := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "-") || fs.Lookup(name) == nil {
			continue
		}
		if !inline && i+1 < len(words) {
			value = words[i+1]
		}
		_ = fs.Set(name, value)
	}
}

// flagsOf lists the flags of the command pos names, as --name, learnt from its flag set.
func (a *App) flagsOf(ctx context.Context, pos []string) []string {
	var out []string
	probe := &App{In: a.In, Out: io.Discard, Err: io.Discard, Now: a.Now, Interval: a.Interval}
	probe.collect = func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			if len(f.Name) == 1 {
				out = append(out, "-"+f.Name)
			} else {
				out = append(out, "--"+f.Name)
			}
		})
	}
	_ = probe.run(ctx, pos)
	slices.Sort(out)
	return slices.Compact(out)
}

// names lists the names of the objects of list's kind, in the namespace the words name (or the
// kubeconfig context's) when namespaced, within a second.
func (a *App) names(ctx context.Context, list client.ObjectList, namespaced bool) []string {
	c, ns, err := a.kube.client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var opts []client.ListOption
	if namespaced {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	var out []string
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			out = append(out, m.GetName())
		}
	}
	return out
}
