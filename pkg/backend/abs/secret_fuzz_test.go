package abs

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseABSSecret: any Secret data parses without panicking; what it accepts is the
// trimmed account and key of a known cloud; and the storage key never reaches an error: the
// error is the same when the key is replaced by another one (of the same emptiness), so no
// part of it can be in the message.
func FuzzParseABSSecret(f *testing.F) {
	for _, s := range [][3]string{
		{"acct\n", "a2V5\n", ""},
		{"acct", "a2V5", "AzureUSGovernmentCloud"},
		{"acct", "a2V5", "AzureChinaCloud"},
		{"acct", "a2V5", "azuregermancloud"},
		{"acct", "a2V5", "Mars"},
		{"", "a2V5", ""},
		{"acct", "", ""},
		{"acct", "AzurePublicCloud", "AzurePublicCloud"},
		{"acct", "c2VjcmV0LWtleQ==", "c2VjcmV0LWtleQ=="}, // a cloud name equal to the key
	} {
		f.Add([]byte(s[0]), []byte(s[1]), []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, account, key, cloudName []byte) {
		data := map[string][]byte{SecretAccountKey: account, SecretKeyKey: key, SecretCloudKey: cloudName}
		gotAccount, gotKey, gotCloud, err := ParseABSSecret(data)
		if err == nil {
			if gotAccount == "" || gotKey == "" || gotAccount != string(bytes.TrimSpace(account)) ||
				string(gotKey) != string(bytes.TrimSpace(key)) || gotCloud != string(bytes.TrimSpace(cloudName)) {
				t.Fatalf("ParseABSSecret accepted account %q, cloud %q, returning %q, %q", account, cloudName, gotAccount, gotCloud)
			}
			if _, err := EndpointSuffix(gotCloud); err != nil {
				t.Fatalf("ParseABSSecret accepted cloud %q that EndpointSuffix refuses: %v", gotCloud, err)
			}
			return
		}
		secret := string(bytes.TrimSpace(key))
		if secret == "" {
			return
		}
		canary := "Q"
		if strings.Contains(secret, canary) {
			canary = "Z"
		}
		data[SecretKeyKey] = []byte(canary)
		_, _, _, errCanary := ParseABSSecret(data)
		if errCanary == nil || errCanary.Error() != err.Error() {
			t.Fatalf("the error depends on the storage key's value: %q with the key, %v with another", err, errCanary)
		}
	})
}
