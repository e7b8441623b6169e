package codec

import (
	"bytes"
	"strings"
	"testing"

	"filippo.io/age"
)

// TestParseIdentities: age-keygen's output (comments, key, blank lines, CRLF line ends as a
// Secret edited on Windows has) parses to one X25519 identity, and the recipient RecipientsOf
// derives from it is the public key age-keygen printed.
func TestParseIdentities(t *testing.T) {
	for name, data := range map[string]string{
		"age-keygen": testKeyFile,
		"blank+crlf": "\r\n" + strings.ReplaceAll(testKeyFile, "\n", "\r\n") + "\r\n",
	} {
		ids, err := ParseIdentities([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ids) != 1 {
			t.Fatalf("%s: %d identities", name, len(ids))
		}
		rs, err := RecipientsOf(ids)
		if err != nil {
			t.Fatal(err)
		}
		if got := rs[0].(*age.X25519Recipient).String(); got != testRecipient {
			t.Errorf("%s: recipient %s, want %s", name, got, testRecipient)
		}
	}

	secret := strings.Split(testKeyFile, "\n")[2]
	for name, data := range map[string]string{
		"empty":          "",
		"comments only":  "# nothing here\n",
		"truncated key":  secret[:len(secret)-3] + "\n",
		"recipient":      testRecipient + "\n",
		"leading spaces": "  " + secret + "\n",
	} {
		_, err := ParseIdentities([]byte(data))
		if err == nil {
			t.Errorf("%s: parsed", name)
			continue
		}
		if strings.Contains(err.Error(), secret[16:30]) {
			t.Errorf("%s: error quotes key material: %v", name, err)
		}
	}
}

// TestParseRecipients: recipients with comments parse; an object written to two recipients is
// read with either identity.
func TestParseRecipients(t *testing.T) {
	other := mustIdentities(t, otherKeyFile)
	otherRecipients, err := RecipientsOf(other)
	if err != nil {
		t.Fatal(err)
	}
	data := "# backups team\n" + testRecipient + "\n\n# break-glass key\n" + otherRecipients[0].(*age.X25519Recipient).String() + "\n"
	rs, err := ParseRecipients([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d recipients", len(rs))
	}
	obj := encode(t, []byte("to both"), Options{Compress: true, Recipients: rs})
	for _, ids := range [][]age.Identity{mustIdentities(t, testKeyFile), other} {
		out, f, err := decodeAll(obj, ids)
		if err != nil || string(out) != "to both" || f != (Format{Compressed: true, Encrypted: true}) {
			t.Errorf("read %q, format %v, err %v", out, f, err)
		}
	}

	for _, bad := range []string{"", "# none\n", "age1notakey\n", strings.Split(testKeyFile, "\n")[2]} {
		if _, err := ParseRecipients([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestRecipientsOf: no identities is an error (an empty recipient list would write plain
// objects); a hybrid post-quantum identity yields its recipient too.
func TestRecipientsOf(t *testing.T) {
	if rs, err := RecipientsOf(nil); err == nil {
		t.Errorf("no identities: %v, no error", rs)
	}
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := RecipientsOf([]age.Identity{pq})
	if err != nil {
		t.Fatal(err)
	}
	obj := encode(t, []byte("pq"), Options{Recipients: rs})
	if out, _, err := decodeAll(obj, []age.Identity{pq}); err != nil || !bytes.Equal(out, []byte("pq")) {
		t.Errorf("hybrid: %q, %v", out, err)
	}
	if _, err := RecipientsOf([]age.Identity{age.NewInjectedFileKeyIdentity(make([]byte, 16))}); err == nil {
		t.Error("an identity of unknown type: no error")
	}
}
