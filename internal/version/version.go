// Package version holds the build version of the operator binaries.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X github.com/etcd-operator/etcd-operator/internal/version.<Name>=...";
// the Makefile and hack/images.sh do (VERSION, the git commit and the commit date).
var (
	// Version is the release version, e.g. v0.2.0, or `git describe` output for other builds.
	Version = "dev"
	// Commit is the git commit the binary was built from; empty falls back to the vcs.revision
	// the Go toolchain records when it builds inside a git checkout.
	Commit = ""
	// Date is the build date in RFC 3339 (the commit date, so that builds are reproducible).
	Date = ""
)

// Info is the build description.
type Info struct {
	Version, Commit, Date, GoVersion, Platform string
}

// Get returns the build description of this binary.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
	}
	return i
}

// String describes the build of binary on one line:
// "etcd-operator v0.2.0 commit 0123abc built 2026-01-02T03:04:05Z go1.26.0 linux/amd64".
func String(binary string) string {
	i := Get()
	s := binary + " " + i.Version
	if i.Commit != "" {
		s += " commit " + i.Commit
	}
	if i.Date != "" {
		s += " built " + i.Date
	}
	return fmt.Sprintf("%s %s %s", s, i.GoVersion, i.Platform)
}
