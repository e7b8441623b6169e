// Package testbintest tests hack/testbin.sh, which links the test binaries of make test once per
// their inputs and runs them: a binary that is not linked again after a change would report the
// old code's result, so the tests here change code the way a developer does and check that the
// next run tests the new code.
package testbintest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// module writes a module "example.test/m" with package a (V returns v), package b (W returns
// a.V()) and a test of b that wants W() == 1, and packages c and b-x whose tests pass; it returns
// the module's directory.
func module(t *testing.T, v string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "go.mod", "module example.test/m\n\ngo 1.22\n")
	write(t, dir, "a/a.go", aSource(v))
	write(t, dir, "b/b.go", "package b\n\nimport \"example.test/m/a\"\n\nfunc W() int { return a.V() }\n")
	write(t, dir, "b/b_test.go", `package b

import "testing"

func TestW(t *testing.T) {
	if got := W(); got != 1 {
		t.Fatalf("W() = %d, want 1", got)
	}
}

func TestOther(t *testing.T) { t.Log("other ran") }
`)
	write(t, dir, "c/c_test.go", "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {}\n")
	// a package whose name starts with b's and a dash: b's cleanup must leave its binary alone
	write(t, dir, "b-x/bx_test.go", "package bx\n\nimport \"testing\"\n\nfunc TestBX(t *testing.T) {}\n")
	return dir
}

// aSource is package a with V returning v. V is not inlined: b's compiled code, and so the test
// main's build ID, stay the same when V's body changes; only a's own build ID tells.
func aSource(v string) string {
	return "package a\n\n//go:noinline\nfunc V() int { return " + v + " }\n"
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testbin runs hack/testbin.sh on the module in dir with its own cache, and returns its
// combined output and whether it succeeded.
func testbin(t *testing.T, dir, cache string, args ...string) (string, bool) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "testbin.sh")
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "TESTBIN_MODULE_DIR="+dir, "CACHE_DIR="+cache, "TESTBIN_DIR=", "TESTBIN_TAGS=",
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output does not say %q:\n%s", w, out)
		}
	}
}

// TestChangeInADependencyIsTested: a function body of a package the tested package imports
// changes (its export data does not, so Go does not rebuild the importer); the next run must
// link again and fail on the new code, never pass with the old binary.
func TestChangeInADependencyIsTested(t *testing.T) {
	dir, cache := module(t, "1"), t.TempDir()
	out, ok := testbin(t, dir, cache, "link", "./...")
	if !ok {
		t.Fatalf("link failed:\n%s", out)
	}
	mustContain(t, out, "3 linked, 0 unchanged")
	out, ok = testbin(t, dir, cache, "run", "2", "./...")
	if !ok {
		t.Fatalf("run failed before the change:\n%s", out)
	}
	mustContain(t, out, "ok  \texample.test/m/b\t", "ok  \texample.test/m/c\t")

	out, _ = testbin(t, dir, cache, "link", "./...")
	mustContain(t, out, "0 linked, 3 unchanged")

	write(t, dir, "a/a.go", aSource("2"))
	out, ok = testbin(t, dir, cache, "link", "./...")
	if !ok {
		t.Fatalf("link failed:\n%s", out)
	}
	mustContain(t, out, "1 linked, 2 unchanged") // c and b-x do not import a
	// two packages (each one's output printed when it ends), then one alone (its output streams)
	for _, pkgs := range []string{"./...", "./b"} {
		out, ok = testbin(t, dir, cache, "run", "2", pkgs)
		if ok {
			t.Fatalf("run %s passed with a dependency that makes the test fail:\n%s", pkgs, out)
		}
		mustContain(t, out, "W() = 2, want 1", "FAIL\texample.test/m/b\t")
	}

	// The old binary is gone: one binary per package stays, b-x's too.
	for pkg, bin := range map[string]string{"b": "b.test", "b-x": "b-x.test"} {
		bins, err := filepath.Glob(filepath.Join(cache, "testbin", "untagged", pkg+"-????????????????????????", bin))
		if err != nil || len(bins) != 1 {
			t.Fatalf("binaries of package %s: %v (%v), want exactly one", pkg, bins, err)
		}
	}
}

// TestFlagsPassedAsGoTestPassesThem: go test's flags reach the binary (-run, -v), and one that
// is not a test binary flag is refused rather than dropped.
func TestFlagsPassedAsGoTestPassesThem(t *testing.T) {
	dir, cache := module(t, "1"), t.TempDir()
	if out, ok := testbin(t, dir, cache, "link", "./..."); !ok {
		t.Fatalf("link failed:\n%s", out)
	}
	out, ok := testbin(t, dir, cache, "run", "1", "./b", "--", "-v", "-run", "^TestOther$")
	if !ok {
		t.Fatalf("run failed:\n%s", out)
	}
	mustContain(t, out, "=== RUN   TestOther", "other ran")
	if strings.Contains(out, "TestW") {
		t.Fatalf("-run ^TestOther$ ran TestW too:\n%s", out)
	}
	out, ok = testbin(t, dir, cache, "run", "1", "./b", "--", "-race")
	if ok {
		t.Fatalf("-race was accepted:\n%s", out)
	}
	mustContain(t, out, "go test flag -race is not passed to test binaries")
}

// TestRunWithoutLinkRefused: a run never falls back to a binary it did not just find linked.
func TestRunWithoutLinkRefused(t *testing.T) {
	dir, cache := module(t, "1"), t.TempDir()
	out, ok := testbin(t, dir, cache, "run", "2", "./...")
	if ok {
		t.Fatalf("run without link passed:\n%s", out)
	}
	mustContain(t, out, "no test binaries for ./...")
}
