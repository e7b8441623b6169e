package codec

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

// buildAge builds the age and age-keygen commands of the age module this module requires (go.mod
// lists age as a tool) into a temporary directory, or skips the test when that fails.
func buildAge(t *testing.T) (ageCmd, keygenCmd string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", dir+string(os.PathSeparator),
		"filippo.io/age/cmd/age", "filippo.io/age/cmd/age-keygen")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the age commands from the module cache (go mod download first?): %v\n%s", err, out)
	}
	return filepath.Join(dir, "age"), filepath.Join(dir, "age-keygen")
}

// run runs a command and fails the test, with its output, if it fails.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), name, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // Output returns *ExitError unwrapped
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr)
	}
	return out
}

// TestAgeCommandInterop proves that a user can recover an object by hand with the standard
// tools, and that the codec reads what the tools write:
//
//   - a key made by age-keygen parses with ParseIdentities and serves for writing (RecipientsOf);
//   - a zstd+age object from NewWriter decrypts with `age -d -i key.txt`, and the result is a
//     zstd stream that the codec and `zstd -d` (when installed) decompress to the original;
//   - an object made with `zstd | age -r` reads back through NewReader as zstd+age.
func TestAgeCommandInterop(t *testing.T) {
	ageCmd, keygenCmd := buildAge(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "key.txt")
	run(t, keygenCmd, "-o", key)
	keyData, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ParseIdentities(keyData)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := RecipientsOf(ids)
	if err != nil {
		t.Fatal(err)
	}
	data := mixedData(5<<20+12345, 11, true)

	// NewWriter -> age -d -> zstd -d.
	obj := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(obj, encode(t, data, Options{Compress: true, Recipients: rs}), 0o600); err != nil {
		t.Fatal(err)
	}
	decrypted := filepath.Join(dir, "backup.db.zst")
	run(t, ageCmd, "-d", "-i", key, "-o", decrypted, obj)
	zst, err := os.ReadFile(decrypted)
	if err != nil {
		t.Fatal(err)
	}
	if f := Sniff(zst); f != (Format{Compressed: true}) {
		t.Fatalf("age -d output sniffs as %v, want zstd", f)
	}
	out, f, err := decodeAll(zst, nil)
	if err != nil || f != (Format{Compressed: true}) || !bytes.Equal(out, data) {
		t.Fatalf("codec zstd reader on age -d output: format %v, err %v, equal %v", f, err, bytes.Equal(out, data))
	}
	zstdCmd, zstdErr := exec.LookPath("zstd")
	if zstdErr != nil {
		t.Log("zstd command not installed: age -d output checked with the codec's zstd reader only")
	} else if out := run(t, zstdCmd, "-q", "-d", "-c", decrypted); !bytes.Equal(out, data) {
		t.Fatalf("zstd -d gave %d bytes, not the %d written", len(out), len(data))
	}

	// zstd | age -r -> NewReader.
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want := Format{Encrypted: true}
	if zstdErr == nil {
		run(t, zstdCmd, "-q", "-o", in+".zst", in)
		in += ".zst"
		want.Compressed = true
	}
	recipient := rs[0].(*age.X25519Recipient).String()
	run(t, ageCmd, "-r", recipient, "-o", in+".age", in)
	enc, err := os.ReadFile(in + ".age")
	if err != nil {
		t.Fatal(err)
	}
	out, f, err = decodeAll(enc, ids)
	if err != nil || f != want || !bytes.Equal(out, data) {
		t.Fatalf("codec on age -r output: format %v (want %v), err %v, equal %v", f, want, err, bytes.Equal(out, data))
	}
}
