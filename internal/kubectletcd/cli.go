// Package kubectletcd is the kubectl plugin `kubectl etcd`: each subcommand reads (and, for
// `backup now`, `restore` and `drill now`, creates; for `defrag` and `rotate-ca`, annotates) the project's
// objects with the user's kubeconfig and prints one screen to an io.Writer (`report` writes a
// bundle). It runs no controller and never calls etcd: what it shows is what the operators
// wrote.
package kubectletcd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/version"
)

// App is one invocation of the plugin: its streams, clock and polling interval (tests shorten
// it), and the client it builds from the global flags.
type App struct {
	In       io.Reader
	Out      io.Writer
	Err      io.Writer
	Now      func() time.Time
	Interval time.Duration
	// PodLogs reads the operators' logs for `report`; nil: through the API server.
	PodLogs PodLogs

	kube kubeFlags
	// collect, when set, receives the command's flag set at its parse and stops the command:
	// how completion learns a command's flags without running it (complete.go).
	collect func(*flag.FlagSet)
}

// New returns an App on the given streams with the wall clock.
func New(in io.Reader, out, errOut io.Writer) *App {
	return &App{In: in, Out: out, Err: errOut, Now: time.Now, Interval: 2 * time.Second}
}

// errUsage is returned for a command line that does not parse; the usage was printed already.
var errUsage = errors.New("usage")

const usage = `kubectl etcd: day-two actions on the EtcdClusters of the etcd operator suite.

Usage:
  kubectl etcd status <cluster> [-o json|yaml]         phase, conditions, members, backups, drills
  kubectl etcd backup now <cluster> [--schedule s] [--wait] [-o json|yaml]
                                                       a one-shot EtcdBackup from the schedule's template
  kubectl etcd backups <cluster> [--schedule s | --backup b] [--ambient-credentials] [-o json|yaml]
                                                       the backup objects in the bucket
  kubectl etcd snapshot download <backup | location URL> -o <file> [--schedule s | --backup b]
                                                       stream a backup to a file, checking etcd's sha256
  kubectl etcd restore <cluster> [--backup b | --schedule s] [--into new-name] [--yes] [--wait] [-o json|yaml]
                                                       an EtcdRestore, after confirming what it replaces
  kubectl etcd drill now <cluster> [--schedule s] [--wait=false] [-o json|yaml]
                                                       a restore drill of the schedule's newest backup now,
                                                       followed to its outcome (passed/failed, time to restore)
  kubectl etcd defrag <cluster> [--wait=false] [--timeout 30m] [-o json|yaml]
                                                       ask the etcd operator for a defragmentation round of every
                                                       member (the defragment-requested-at annotation), followed
                                                       until it is done
  kubectl etcd rotate-ca <cluster> [--wait=false] [--timeout 30m] [-o json|yaml]
                                                       a new CA for a TLS.auto cluster (the rotate-ca annotation),
                                                       followed through its steps without lock-out
  kubectl etcd report <cluster> [-f out.tar.gz] [--operator-namespace ns] [--log-lines n]
                                                       a redacted support bundle: the cluster's objects, events,
                                                       the operators' logs; no Secret data
  kubectl etcd version                                 the plugin's version, commit and platform

Global flags (anywhere on the line):
  -n, --namespace   namespace (default: the kubeconfig context's)
  --kubeconfig      kubeconfig file (default: $KUBECONFIG or ~/.kube/config)
  --context         kubeconfig context

-o json|yaml prints an object on stdout instead of the screen; progress goes to stderr.
`

// Run runs the command line args (without the program name) and returns the exit code: 0 on
// success, 1 on failure, 2 on a usage error.
func (a *App) Run(ctx context.Context, args []string) int {
	err := a.run(ctx, args)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errOutcome):
		return 1
	default:
		fmt.Fprintln(a.Err, "error:", err)
		return 1
	}
}

func (a *App) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(a.Err, usage)
		return errUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(a.Out, usage)
		return nil
	}
	global, args := leadingGlobalFlags(args)
	if len(args) == 0 {
		return a.usageError("no command")
	}
	// The subcommands' flag sets know the global flags too: those given before the command
	// (`kubectl etcd -n prod status main`, as kubectl passes them on) go after it.
	cmd, rest := args[0], append(args[1:len(args):len(args)], global...)
	switch cmd {
	case "status":
		return a.status(ctx, rest)
	case "backup":
		if len(rest) == 0 || rest[0] != "now" {
			return a.usageError("backup: want `backup now <cluster>`")
		}
		return a.backupNow(ctx, rest[1:])
	case "backups":
		return a.backups(ctx, rest)
	case "snapshot":
		return a.snapshotCmd(ctx, rest)
	case "restore":
		return a.restore(ctx, rest)
	case "drill":
		if len(rest) == 0 || rest[0] != "now" {
			return a.usageError("drill: want `drill now <cluster>`")
		}
		return a.drillNow(ctx, rest[1:])
	case "defrag":
		return a.defrag(ctx, rest)
	case "rotate-ca":
		return a.rotateCA(ctx, rest)
	case "report":
		return a.report(ctx, rest)
	case completeCommand:
		return a.complete(ctx, rest)
	case "version", "--version":
		fmt.Fprintln(a.Out, version.String("kubectl-etcd"))
		return nil
	default:
		return a.usageError(fmt.Sprintf("unknown command %q", cmd))
	}
}

// leadingGlobalFlags splits the global flags (kubeFlags) that come before the command, each
// with its value, from the rest of the line.
func leadingGlobalFlags(args []string) (global, rest []string) {
	for len(args) > 0 {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if !strings.HasPrefix(args[0], "-") || !slices.Contains([]string{"n", "namespace", "kubeconfig", "context"}, name) {
			break
		}
		n := 2
		if hasValue || len(args) == 1 {
			n = 1
		}
		global, args = append(global, args[:n]...), args[n:]
	}
	return global, args
}

// usageError prints msg and the usage to Err.
func (a *App) usageError(msg string) error {
	fmt.Fprintf(a.Err, "error: %s\n\n%s", msg, usage)
	return errUsage
}

// flagSet is a subcommand's flags with the global ones added.
func (a *App) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.Err)
	a.kube.add(fs)
	return fs
}

// parse parses flags and positional arguments in any order (`status main -n prod` as well as
// `status -n prod main`), which the flag package alone does not, and returns the positionals;
// there must be exactly want of them.
func (a *App) parse(fs *flag.FlagSet, args []string, want int, what string) ([]string, error) {
	if a.collect != nil {
		a.collect(fs)
		return nil, errUsage
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errUsage
			}
			return nil, a.usageError(err.Error())
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != want {
		return nil, a.usageError(fmt.Sprintf("%s: want %s", fs.Name(), what))
	}
	return pos, nil
}
