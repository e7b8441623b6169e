package s3

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseAWSSecret(t *testing.T) {
	const creds = "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n"
	cases := []struct {
		name       string
		data       map[string][]byte
		wantKey    string
		wantToken  string
		wantRegion string
		wantErr    string
	}{
		{
			name:       "coreos example: credentials and config",
			data:       map[string][]byte{"credentials": []byte(creds), "config": []byte("[default]\nregion = eu-west-1\n")},
			wantKey:    "AKIDEXAMPLE",
			wantRegion: "eu-west-1",
		},
		{
			name:    "credentials only",
			data:    map[string][]byte{"credentials": []byte(creds)},
			wantKey: "AKIDEXAMPLE",
		},
		{
			name: "session token, comments, other profiles",
			data: map[string][]byte{
				"credentials": []byte("# managed by ops\n[other]\naws_access_key_id = NO\naws_secret_access_key = NO\n\n" +
					"[default]\naws_access_key_id=AKID2\naws_secret_access_key=s2\naws_session_token=tok\n"),
				"config": []byte("[profile other]\nregion = us-west-2\n[default]\nregion=ap-south-1\n"),
			},
			wantKey:    "AKID2",
			wantToken:  "tok",
			wantRegion: "ap-south-1",
		},
		{
			name:    "missing credentials file",
			data:    map[string][]byte{"config": []byte("[default]\nregion = eu-west-1\n")},
			wantErr: `missing key "credentials"`,
		},
		{
			name:    "no default profile",
			data:    map[string][]byte{"credentials": []byte("[prod]\naws_access_key_id = A\naws_secret_access_key = B\n")},
			wantErr: "no [default] profile",
		},
		{
			name:    "role profile without static keys",
			data:    map[string][]byte{"credentials": []byte("[default]\nrole_arn = arn:aws:iam::1:role/x\ncredential_source = Environment\n")},
			wantErr: "has no aws_access_key_id",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, region, err := ParseAWSSecret(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseAWSSecret() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAWSSecret(): %v", err)
			}
			if c.AccessKeyID != tc.wantKey || c.SessionToken != tc.wantToken || c.SecretAccessKey == "" || region != tc.wantRegion {
				t.Fatalf("ParseAWSSecret() = %v token %q region %q, want key %q token %q region %q",
					c, c.SessionToken, region, tc.wantKey, tc.wantToken, tc.wantRegion)
			}
		})
	}
}

func TestCredentialsDoNotPrintSecrets(t *testing.T) {
	c := Credentials{AccessKeyID: "AKID", SecretAccessKey: "very-secret", SessionToken: "token-secret"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, c); strings.Contains(out, "secret") {
			t.Errorf("Sprintf(%q) = %q reveals a secret", format, out)
		}
		if out := fmt.Sprintf(format, Config{Bucket: "b", Credentials: &c}); strings.Contains(out, "secret") {
			t.Errorf("Sprintf(%q, Config) = %q reveals a secret", format, out)
		}
	}
}
