package abs

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseABSSecret(t *testing.T) {
	cases := []struct {
		name        string
		data        map[string][]byte
		wantAccount string
		wantCloud   string
		wantSuffix  string
		wantErr     string
	}{
		{"public cloud by default", map[string][]byte{"storage-account": []byte("acct\n"), "storage-key": []byte("a2V5\n")}, "acct", "", "core.windows.net", ""},
		{"US government", map[string][]byte{"storage-account": []byte("acct"), "storage-key": []byte("a2V5"), "cloud": []byte("AzureUSGovernmentCloud")}, "acct", "AzureUSGovernmentCloud", "core.usgovcloudapi.net", ""},
		{"China", map[string][]byte{"storage-account": []byte("acct"), "storage-key": []byte("a2V5"), "cloud": []byte("AzureChinaCloud")}, "acct", "AzureChinaCloud", "core.chinacloudapi.cn", ""},
		{"Germany, any case", map[string][]byte{"storage-account": []byte("acct"), "storage-key": []byte("a2V5"), "cloud": []byte("azuregermancloud")}, "acct", "azuregermancloud", "core.cloudapi.de", ""},
		{"unknown cloud", map[string][]byte{"storage-account": []byte("acct"), "storage-key": []byte("a2V5"), "cloud": []byte("Mars")}, "", "", "", `unknown cloud "Mars"`},
		{"no account", map[string][]byte{"storage-key": []byte("a2V5")}, "", "", "", "storage-account"},
		{"no key", map[string][]byte{"storage-account": []byte("acct")}, "", "", "", "storage-key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			account, key, cloudName, err := ParseABSSecret(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseABSSecret() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseABSSecret(): %v", err)
			}
			suffix, err := EndpointSuffix(cloudName)
			if account != tc.wantAccount || key != "a2V5" || cloudName != tc.wantCloud || err != nil || suffix != tc.wantSuffix {
				t.Fatalf("ParseABSSecret() = %q, key %q, cloud %q (suffix %q, %v); want %q, a2V5, %q (suffix %q)",
					account, string(key), cloudName, suffix, err, tc.wantAccount, tc.wantCloud, tc.wantSuffix)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantURL string
		wantErr bool
	}{
		{"public", Config{Container: "c", Account: "acct"}, "https://acct.blob.core.windows.net", false},
		{"China", Config{Container: "c", Account: "acct", Cloud: "AzureChinaCloud"}, "https://acct.blob.core.chinacloudapi.cn", false},
		{"Azurite endpoint", Config{Container: "c", Account: "devstoreaccount1", Endpoint: "http://127.0.0.1:10000/devstoreaccount1/"}, "http://127.0.0.1:10000/devstoreaccount1", false},
		{"no container", Config{Account: "acct"}, "", true},
		{"relative endpoint", Config{Container: "c", Account: "a", Endpoint: "127.0.0.1:10000"}, "", true},
		{"unknown cloud", Config{Container: "c", Account: "a", Cloud: "Mars"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("validate() = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && tc.cfg.serviceURL() != tc.wantURL {
				t.Fatalf("serviceURL() = %q, want %q", tc.cfg.serviceURL(), tc.wantURL)
			}
		})
	}
}

func TestKeyIsNotPrinted(t *testing.T) {
	cfg := Config{Container: "c", Account: "a", Key: "c2VjcmV0LWtleQ=="}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, cfg); strings.Contains(out, "c2VjcmV0") {
			t.Errorf("Sprintf(%q, cfg) = %q reveals the key", format, out)
		}
	}
}

func TestBadKeyIsNotQuoted(t *testing.T) {
	_, err := New(t.Context(), Config{Container: "c", Account: "a", Key: "not base64 secret!"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("New() with a bad key = %v, want an error that does not quote the key", err)
	}
}
