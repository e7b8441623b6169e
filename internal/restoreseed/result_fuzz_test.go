package restoreseed

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseResult: any termination message parses without panicking; what parses has an
// outcome and reads back the same after the agent's encoding.
func FuzzParseResult(f *testing.F) {
	for _, s := range []string{
		`{"outcome":"Restored","size":10,"sha256":"ab","revision":5,"totalKeys":3,"hashKV":7,"compactRevision":1,"seconds":1.5}`,
		`{"outcome":"Failed","reason":"BackupCorrupt","message":"checksum mismatch"}`,
		`{"outcome":""}`, `{}`, `null`, ``, `not json`, `{"outcome":"Restored","size":"10"}`,
		`{"outcome":"Restored","hashKV":-1}`, `{"OUTCOME":"AlreadyRestored"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		r, err := ParseResult(msg)
		if err != nil {
			if r != nil {
				t.Fatalf("ParseResult(%q) failed (%v) but returned %+v", msg, err, r)
			}
			return
		}
		if r.Outcome == "" {
			t.Fatalf("ParseResult(%q) = %+v without an outcome", msg, r)
		}
		if len(msg) > 4096 {
			return // longer than a termination message can be: encode would shorten it
		}
		again, err := ParseResult(string(r.encode()))
		if err != nil || *again != *r {
			t.Fatalf("ParseResult(%q) = %+v; encoded and parsed again: %+v, %v", msg, r, again, err)
		}
	})
}

// FuzzResultEncode: the agent's result always ends, is JSON ParseResult reads back with every
// field but Message unchanged, fits the termination message whenever the fields other than
// Message do, and keeps a prefix of Message (cut at a character boundary).
func FuzzResultEncode(f *testing.F) {
	f.Add("Failed", "X", strings.Repeat("m", 10000), "", int64(0), int64(0), int64(0), uint32(0), int64(0), 0.0)
	f.Add("Restored", "", "", "e3b0c442", int64(1<<40), int64(12345), int64(3), uint32(0xdeadbeef), int64(100), 12.5)
	f.Add("Failed", strings.Repeat("r", 4000), "short", "", int64(0), int64(0), int64(0), uint32(0), int64(0), 0.0)
	f.Add("Failed", "X", strings.Repeat("é<", 3000), "", int64(-1), int64(-1), int64(0), uint32(0), int64(0), -1.0)
	f.Fuzz(func(t *testing.T, outcome, reason, message, sha string, size, rev, total int64, hash uint32, compact int64, seconds float64) {
		if outcome == "" || math.IsNaN(seconds) || math.IsInf(seconds, 0) {
			t.Skip() // the agent always sets an outcome; Seconds is a measured duration
		}
		for _, s := range []string{outcome, reason, message, sha} {
			if !utf8.ValidString(s) {
				t.Skip() // the agent's strings are its own messages and etcdutl's UTF-8 output
			}
		}
		r := &Result{Outcome: outcome, Reason: reason, Message: message, Size: size, SHA256: sha, Revision: rev,
			TotalKeys: total, HashKV: hash, CompactRevision: compact, Seconds: seconds}
		want := *r
		out := r.encode()
		base := want
		base.Message = ""
		if b, _ := json.Marshal(base); len(b) <= 4000 && len(out) > 4096 {
			t.Fatalf("encoded result is %d bytes, more than a termination message holds", len(out))
		}
		back, err := ParseResult(string(out))
		if err != nil {
			t.Fatalf("ParseResult(encode) = %v", err)
		}
		msg := back.Message
		back.Message, want.Message = "", ""
		if *back != want {
			t.Fatalf("round trip changed the result: %+v, want %+v", back, want)
		}
		if msg != message && !strings.HasPrefix(message, strings.TrimSuffix(msg, "...")) {
			t.Fatalf("message %q is not a prefix of the original", msg)
		}
		if !utf8.ValidString(msg) {
			t.Fatalf("message cut inside a character: %q", msg)
		}
	})
}
