// Command sbom writes an SPDX 2.3 JSON software bill of materials of Go binaries: one package
// per binary and one per Go module it was built from (path, version, go.sum hash), read from
// the build information the Go toolchain embeds (debug/buildinfo, what `go version -m` prints).
// It reads cross-compiled binaries of any platform and makes no network request.
//
//	go run ./hack/tools/sbom -name etcd-operator -version v0.2.0 -out dist/sbom.spdx.json bin/linux_*/etcd-operator ...
package main

import (
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	name := flag.String("name", "etcd-operator", "document name")
	version := flag.String("version", "", "version of the binaries")
	created := flag.String("created", "", "creation time, RFC 3339 (default now)")
	namespace := flag.String("namespace", "https://github.com/etcd-operator/etcd-operator/spdx", "document namespace prefix")
	out := flag.String("out", "", "file to write (default stdout)")
	flag.Parse()
	if err := run(*name, *version, *created, *namespace, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(name, version, created, namespace, out string, bins []string) error {
	if len(bins) == 0 {
		return errors.New("no binary given")
	}
	if created == "" {
		created = time.Now().UTC().Format(time.RFC3339)
	}
	doc := newDocument(name, version, created, namespace)
	for _, bin := range bins {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		doc.addBinary(filepath.Base(bin), version, platform(info), info)
	}
	doc.sort()
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if out == "" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

func platform(info *buildinfo.BuildInfo) string {
	var goos, goarch string
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	return strings.Trim(goos+"/"+goarch, "/")
}
