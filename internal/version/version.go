// Package version holds the build version of the operator binaries.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at build time with -ldflags "-X .../internal/version.Version=...".
var Version = "dev"

// String describes the build: version, Go version and platform.
func String(binary string) string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = " (" + s.Value + ")"
			}
		}
	}
	return fmt.Sprintf("%s %s%s %s %s/%s", binary, Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
