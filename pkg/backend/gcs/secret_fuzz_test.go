package gcs

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseGCPSecret: any Secret data parses without panicking; what it accepts is exactly one
// of a trimmed access token and a credentials file of an accepted type; and the error depends
// on nothing secret: for a token only on whether one is set, for credentials.json only on
// whether it is JSON and on its "type" (a service account's private_key never shows).
func FuzzParseGCPSecret(f *testing.F) {
	sa := `{"type":"service_account","project_id":"p","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n","client_email":"x@p.iam.gserviceaccount.com"}`
	for _, s := range []struct {
		token, raw string
		structured bool
		typ, key   string
	}{
		{token: "ya29.token\n"},
		{raw: sa},
		{raw: `{"type":"authorized_user","refresh_token":"r"}`},
		{token: "t", raw: sa},
		{raw: "secret-not-json"},
		{raw: `{"type":"external_account"}`},
		{raw: `{"type":"service_account","private_key":"x"`},
		{raw: "null"},
		{structured: true, typ: "service_account", key: "-----BEGIN PRIVATE KEY-----\nMIIE\n"},
		{structured: true, typ: "impersonated_service_account", key: "impersonated_service_account"},
		{structured: true, typ: "external_account", key: "\xff\xfe"},
	} {
		f.Add([]byte(s.token), []byte(s.raw), s.structured, s.typ, s.key)
	}
	f.Fuzz(func(t *testing.T, token, raw []byte, structured bool, typ, privateKey string) {
		if structured {
			// A credentials file whose secret the test knows.
			raw, _ = json.Marshal(map[string]string{"type": typ, "private_key": privateKey, "client_email": "x@p.iam.gserviceaccount.com"})
		}
		data := map[string][]byte{SecretAccessTokenKey: token, SecretCredentialsJSONKey: raw}
		c, err := ParseGCPSecret(data)
		if err == nil {
			checkAccepted(t, c, token, raw)
			return
		}
		if c.AccessToken != "" || c.JSON != nil {
			t.Fatalf("ParseGCPSecret failed (%v) but returned credentials", err)
		}
		// The same error with the secret parts replaced: a token by another token, a
		// credentials file by one holding only its type (or by other invalid JSON).
		other := map[string][]byte{SecretAccessTokenKey: nil, SecretCredentialsJSONKey: raw}
		if len(bytes.TrimSpace(token)) > 0 {
			other[SecretAccessTokenKey] = []byte("canary-token")
		}
		if len(raw) > 0 {
			var head struct {
				Type string `json:"type"`
			}
			other[SecretCredentialsJSONKey] = []byte("{not json")
			if json.Unmarshal(raw, &head) == nil {
				other[SecretCredentialsJSONKey], _ = json.Marshal(head)
			}
		}
		if _, errOther := ParseGCPSecret(other); errOther == nil || errOther.Error() != err.Error() {
			t.Fatalf("the error depends on secret content: %q, and %v without it", err, errOther)
		}
	})
}

func checkAccepted(t *testing.T, c Credentials, token, raw []byte) {
	t.Helper()
	tok := string(bytes.TrimSpace(token))
	switch {
	case tok != "" && len(raw) > 0:
		t.Fatal("ParseGCPSecret accepted both a token and credentials.json")
	case tok != "":
		if c.AccessToken != tok || len(c.JSON) > 0 {
			t.Fatalf("ParseGCPSecret returned %v for a token", c)
		}
	default:
		var head struct {
			Type string `json:"type"`
		}
		if c.AccessToken != "" || !bytes.Equal(c.JSON, raw) || json.Unmarshal(c.JSON, &head) != nil {
			t.Fatalf("ParseGCPSecret accepted credentials.json that is not JSON, or changed it")
		}
		if _, ok := credentialTypes[head.Type]; !ok {
			t.Fatalf("ParseGCPSecret accepted credentials of type %q", head.Type)
		}
	}
	if c.clientOption() == nil {
		t.Fatal("no client option for accepted credentials")
	}
}
