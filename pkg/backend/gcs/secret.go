package gcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/oauth2"
	"google.golang.org/api/option"
)

// Keys of the coreos gcpSecret; exactly one of them must be set.
const (
	SecretAccessTokenKey     = "access-token"
	SecretCredentialsJSONKey = "credentials.json"
)

// Credentials are the contents of a gcpSecret: an OAuth2 access token, or a credentials JSON
// file (a service account key, or an authorized user's refresh token). String hides both.
type Credentials struct {
	// AccessToken is used as is and never refreshed: uploads fail once it expires.
	AccessToken string
	// JSON is a credentials file of type "service_account" or "authorized_user".
	JSON []byte
}

// String implements fmt.Stringer without revealing the token or the key.
func (c Credentials) String() string {
	switch {
	case c.AccessToken != "":
		return "{AccessToken:<redacted>}"
	case len(c.JSON) > 0:
		return "{JSON:<redacted>}"
	}
	return "{}"
}

// GoString implements fmt.GoStringer like String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// credentialTypes are the credential files accepted, mapped to the loader that checks they are
// what they claim. Other types (external_account, impersonation) can make the client fetch
// tokens from URLs named in the file, so a secret of those types is refused.
var credentialTypes = map[string]option.CredentialsType{
	"service_account": option.ServiceAccount,
	"authorized_user": option.AuthorizedUser,
}

func (c *Credentials) validate() error {
	switch {
	case c.AccessToken != "" && len(c.JSON) > 0:
		return errors.New("gcpSecret: set either access-token or credentials.json, not both")
	case c.AccessToken != "":
		return nil
	case len(c.JSON) == 0:
		return errors.New("gcpSecret: neither access-token nor credentials.json is set")
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(c.JSON, &head); err != nil {
		// Not wrapped: a JSON syntax error can quote the file's content.
		return errors.New("gcpSecret: credentials.json is not valid JSON")
	}
	if _, ok := credentialTypes[head.Type]; !ok {
		return fmt.Errorf("gcpSecret: credentials.json has type %q, want service_account or authorized_user", head.Type)
	}
	return nil
}

func (c *Credentials) clientOption() option.ClientOption {
	if c.AccessToken != "" {
		return option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: c.AccessToken}))
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(c.JSON, &head) // validated in validate
	return option.WithAuthCredentialsJSON(credentialTypes[head.Type], c.JSON)
}

// ParseGCPSecret reads the data of a coreos gcpSecret: `access-token` (an OAuth2 access token)
// or `credentials.json` (a service account key or authorized user file).
func ParseGCPSecret(data map[string][]byte) (Credentials, error) {
	c := Credentials{
		AccessToken: string(bytes.TrimSpace(data[SecretAccessTokenKey])),
		JSON:        data[SecretCredentialsJSONKey],
	}
	if err := c.validate(); err != nil {
		return Credentials{}, err
	}
	return c, nil
}
