package abs

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
)

// Keys of the coreos absSecret.
const (
	SecretAccountKey = "storage-account"
	SecretKeyKey     = "storage-key"
	SecretCloudKey   = "cloud"
)

// SharedKey is a storage account key. It prints as <redacted>, so a Config can be logged.
type SharedKey string

// String implements fmt.Stringer without revealing the key.
func (SharedKey) String() string { return "<redacted>" }

// GoString implements fmt.GoStringer like String, for %#v.
func (SharedKey) GoString() string { return "<redacted>" }

type azureCloud struct {
	name   string
	suffix string               // storage endpoint suffix
	config *cloud.Configuration // Entra ID authority for ambient credentials; nil: none
}

// clouds are the names the coreos operator accepted (go-autorest environment names).
var clouds = []azureCloud{
	{"AzurePublicCloud", "core.windows.net", &cloud.AzurePublic},
	{"AzureUSGovernmentCloud", "core.usgovcloudapi.net", &cloud.AzureGovernment},
	{"AzureChinaCloud", "core.chinacloudapi.cn", &cloud.AzureChina},
	// Azure Germany closed in 2021; its storage endpoints are kept for old secrets.
	{"AzureGermanCloud", "core.cloudapi.de", nil},
}

// lookupCloud finds a cloud by name, case-insensitively; "" is the public cloud.
func lookupCloud(name string) (azureCloud, error) {
	if name == "" {
		return clouds[0], nil
	}
	for _, c := range clouds {
		if strings.EqualFold(c.name, name) {
			return c, nil
		}
	}
	names := make([]string, len(clouds))
	for i, c := range clouds {
		names[i] = c.name
	}
	return azureCloud{}, fmt.Errorf("abs: unknown cloud %q, want one of %s", name, strings.Join(names, ", "))
}

// EndpointSuffix returns the storage endpoint suffix of a cloud name, e.g. "core.windows.net"
// for "AzurePublicCloud" or "".
func EndpointSuffix(cloudName string) (string, error) {
	c, err := lookupCloud(cloudName)
	return c.suffix, err
}

// ParseABSSecret reads the data of a coreos absSecret: `storage-account`, `storage-key` and
// optionally `cloud`. Surrounding whitespace (a trailing newline from `kubectl create secret
// --from-file`) is trimmed.
func ParseABSSecret(data map[string][]byte) (account string, key SharedKey, cloudName string, err error) {
	account = string(bytes.TrimSpace(data[SecretAccountKey]))
	key = SharedKey(bytes.TrimSpace(data[SecretKeyKey]))
	cloudName = string(bytes.TrimSpace(data[SecretCloudKey]))
	switch {
	case account == "":
		return "", "", "", fmt.Errorf("absSecret: missing key %q", SecretAccountKey)
	case key == "":
		return "", "", "", fmt.Errorf("absSecret: missing key %q", SecretKeyKey)
	}
	if _, err := lookupCloud(cloudName); err != nil {
		return "", "", "", errors.New("absSecret: " + strings.TrimPrefix(err.Error(), "abs: "))
	}
	return account, key, cloudName, nil
}
