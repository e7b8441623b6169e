package gcs

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// httpClient returns an HTTP client that authenticates as auth says (the storage library's
// default scopes) over a transport trusting the system's roots plus caBundle.
func httpClient(ctx context.Context, caBundle []byte, auth []option.ClientOption) (*http.Client, error) {
	base, err := backend.HTTPTransport(caBundle)
	if err != nil {
		return nil, fmt.Errorf("gcs: %w", err)
	}
	opts := append([]option.ClientOption{
		option.WithScopes(storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform"),
	}, auth...)
	rt, err := htransport.NewTransport(ctx, base, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcs: creating transport: %w", err)
	}
	return &http.Client{Transport: rt}, nil
}
