package s3

import (
	"strings"
	"testing"
)

// FuzzParseAWSSecret: any pair of shared-config files parses without panicking, and what it
// accepts has both static keys.
func FuzzParseAWSSecret(f *testing.F) {
	const creds = "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n"
	for _, s := range [][2]string{
		{creds, "[default]\nregion = eu-west-1\n"},
		{creds, ""},
		{"# managed by ops\n[other]\naws_access_key_id = NO\naws_secret_access_key = NO\n\n[default]\naws_access_key_id=AKID2\naws_secret_access_key=s2\naws_session_token=tok\n",
			"[profile other]\nregion = us-west-2\n[default]\nregion=ap-south-1\n"},
		{"[prod]\naws_access_key_id = A\naws_secret_access_key = B\n", ""},
		{"[default]\nrole_arn = arn:aws:iam::1:role/x\ncredential_source = Environment\n", ""},
		{creds, "[default]\nrequest_min_compression_size_bytes = x\nretry_mode = y\n"},
		{"[default\naws_access_key_id\n=\n", "[[[\n"},
		{creds + "aws_session_token = \"\n", ""}, // made the SDK's parser panic
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, credentials, config []byte) {
		c, _, err := ParseAWSSecret(map[string][]byte{SecretCredentialsKey: credentials, SecretConfigKey: config})
		if err == nil && (c.AccessKeyID == "" || c.SecretAccessKey == "") {
			t.Fatalf("ParseAWSSecret accepted credentials without static keys: %v", c)
		}
	})
}

// FuzzAWSSecretNotInError: whatever else the files hold, the value of aws_secret_access_key
// or aws_session_token in the default profile is never in ParseAWSSecret's error, unless the
// same text is there when the value is replaced by another (it is then the file's other
// content or the message itself, not the secret).
func FuzzAWSSecretNotInError(f *testing.F) {
	for _, s := range [][4]string{
		{"wJalrXUtnFEMI/K7MDENG", "", "", ""},
		{"wJalrXUtnFEMI/K7MDENG", "tok", "[default]\nregion = eu-west-1\n", ""},
		{"secret-value-1", "", "", "[default]\nrequest_min_compression_size_bytes = secret-value-1\n"},
		{"secret-value-2", "", "role_arn = arn:aws:iam::1:role/x\n", ""},
		{"secret # comment", "token ; comment", "", ""},
		{"[default]", "", "", ""},
		{"default", "", "[other]\n", ""},
		{"sso_start_url = x", "", "sso_session = s\n", "[sso-session s]\n"},
	} {
		f.Add(s[0], s[1], []byte(s[2]), []byte(s[3]))
	}
	f.Fuzz(func(t *testing.T, secret, token string, rest, config []byte) {
		if strings.ContainsAny(secret+token, "\r\n") {
			t.Skip() // a value on one line of the file cannot hold a line break
		}
		parse := func(secret, token string) error {
			creds := "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = " + secret +
				"\naws_session_token = " + token + "\n" + string(rest)
			_, _, err := ParseAWSSecret(map[string][]byte{SecretCredentialsKey: []byte(creds), SecretConfigKey: config})
			return err
		}
		err := parse(secret, token)
		if err == nil {
			return
		}
		for _, v := range []string{strings.TrimSpace(secret), strings.TrimSpace(token)} {
			if len(v) < 4 || !strings.Contains(err.Error(), v) {
				continue
			}
			errOther := parse(canaryFor(secret), canaryFor(token))
			if errOther == nil || !strings.Contains(errOther.Error(), v) {
				t.Fatalf("secret %q is in the error %q (replaced: %v)", v, err, errOther)
			}
		}
	})
}

// canaryFor is a value of v's length that shares no byte with it.
func canaryFor(v string) string {
	c := "Q"
	if strings.Contains(v, c) {
		c = "Z"
	}
	return strings.Repeat(c, len(v))
}
