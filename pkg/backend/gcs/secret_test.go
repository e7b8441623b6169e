package gcs

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseGCPSecret(t *testing.T) {
	sa := []byte(`{"type":"service_account","project_id":"p","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n","client_email":"x@p.iam.gserviceaccount.com"}`)
	cases := []struct {
		name      string
		data      map[string][]byte
		wantToken string
		wantJSON  bool
		wantErr   string
	}{
		{"access token, trailing newline trimmed", map[string][]byte{"access-token": []byte("ya29.token\n")}, "ya29.token", false, ""},
		{"service account key", map[string][]byte{"credentials.json": sa}, "", true, ""},
		{"authorized user", map[string][]byte{"credentials.json": []byte(`{"type":"authorized_user","refresh_token":"r"}`)}, "", true, ""},
		{"both set", map[string][]byte{"access-token": []byte("t"), "credentials.json": sa}, "", false, "not both"},
		{"neither set", map[string][]byte{"other": []byte("x")}, "", false, "neither"},
		{"not JSON", map[string][]byte{"credentials.json": []byte("secret-not-json")}, "", false, "not valid JSON"},
		{"external account refused", map[string][]byte{"credentials.json": []byte(`{"type":"external_account"}`)}, "", false, "external_account"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseGCPSecret(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseGCPSecret() error = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %q quotes the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGCPSecret(): %v", err)
			}
			if c.AccessToken != tc.wantToken || (len(c.JSON) > 0) != tc.wantJSON {
				t.Fatalf("ParseGCPSecret() = token %q json %v, want token %q json %v", c.AccessToken, len(c.JSON) > 0, tc.wantToken, tc.wantJSON)
			}
			if out := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(out, "secret") || strings.Contains(out, "ya29") {
				t.Fatalf("printing Credentials reveals them: %s", out)
			}
		})
	}
}
