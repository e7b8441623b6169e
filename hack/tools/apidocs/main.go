// Command apidocs writes docs/api-reference.md from the Go types of pkg/apis/etcd/v1beta2 (their
// doc comments and kubebuilder markers, read with go/ast: no network, no dependency outside the
// standard library, same output for the same input), and checks that the Grafana dashboard
// only uses metrics the operators export.
//
//	go run ./hack/tools/apidocs -out docs/api-reference.md          write the reference
//	go run ./hack/tools/apidocs -out docs/api-reference.md -verify  fail if it is stale
//	go run ./hack/tools/apidocs -dashboard docs/grafana/etcd-operator-dashboard.json
//	                                                                 check the dashboard's metrics
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	apiDir := flag.String("api", "pkg/apis/etcd/v1beta2", "directory of the API types")
	out := flag.String("out", "", "Markdown file to write (or to compare with -verify)")
	verify := flag.Bool("verify", false, "do not write: fail if -out differs from what would be generated")
	dashboard := flag.String("dashboard", "", "Grafana dashboard JSON whose metric names are checked against the code")
	root := flag.String("root", ".", "repository root (where the metrics are defined)")
	flag.Parse()
	if err := run(*apiDir, *out, *verify, *dashboard, *root); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(apiDir, out string, verify bool, dashboard, root string) error {
	if out != "" {
		api, err := parseAPI(apiDir)
		if err != nil {
			return err
		}
		doc := render(api)
		if verify {
			old, err := os.ReadFile(out)
			if err != nil {
				return err
			}
			if !bytes.Equal(old, doc) {
				return fmt.Errorf("%s is stale: run 'make api-docs' and commit", out)
			}
		} else if err := os.WriteFile(out, doc, 0o644); err != nil {
			return err
		}
	}
	if dashboard != "" {
		if err := checkDashboard(root, dashboard); err != nil {
			return err
		}
	}
	return nil
}
