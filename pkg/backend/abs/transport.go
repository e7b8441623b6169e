package abs

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// clientOptions returns the SDK client options: its defaults, or with a CA bundle an HTTP
// client trusting the system's roots plus the bundle (for the blob service and Entra ID alike).
func clientOptions(caBundle []byte) (azcore.ClientOptions, error) {
	if len(caBundle) == 0 {
		return azcore.ClientOptions{}, nil
	}
	tr, err := backend.HTTPTransport(caBundle)
	if err != nil {
		return azcore.ClientOptions{}, fmt.Errorf("abs: %w", err)
	}
	return azcore.ClientOptions{Transport: &http.Client{Transport: tr}}, nil
}
