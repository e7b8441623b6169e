package s3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/config"
)

// Keys of the coreos awsSecret: the two files of an AWS shared configuration, profile "default".
const (
	SecretCredentialsKey = "credentials"
	SecretConfigKey      = "config"
)

// Credentials are static AWS credentials. String and GoString hide the secret parts, so a
// Config can be printed or logged safely.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// String implements fmt.Stringer without revealing the secret key or the session token.
func (c Credentials) String() string {
	return fmt.Sprintf("{AccessKeyID:%s SecretAccessKey:<redacted> SessionToken:<redacted>}", c.AccessKeyID)
}

// GoString implements fmt.GoStringer like String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// ParseAWSSecret reads the data of a coreos awsSecret: a `credentials` file (required) and a
// `config` file (optional), both in the AWS shared-config INI format. It returns the static
// credentials and region of the "default" profile. The files are parsed by the SDK's own
// shared-config loader, through a private temporary directory that is removed before return;
// nothing is read from the environment or the home directory.
//
// Only static keys (aws_access_key_id, aws_secret_access_key, optional aws_session_token) are
// supported; profiles that assume roles or use SSO are rejected.
func ParseAWSSecret(data map[string][]byte) (Credentials, string, error) {
	creds, ok := data[SecretCredentialsKey]
	if !ok {
		return Credentials{}, "", fmt.Errorf("awsSecret: missing key %q", SecretCredentialsKey)
	}
	dir, err := os.MkdirTemp("", "aws-secret-")
	if err != nil {
		return Credentials{}, "", fmt.Errorf("awsSecret: %w", err)
	}
	defer os.RemoveAll(dir)
	credPath, cfgPath := filepath.Join(dir, "credentials"), filepath.Join(dir, "config")
	// An empty config file rather than none: a nil list would make the SDK fall back to ~/.aws.
	if err := os.WriteFile(credPath, creds, 0o600); err != nil {
		return Credentials{}, "", fmt.Errorf("awsSecret: %w", err)
	}
	if err := os.WriteFile(cfgPath, data[SecretConfigKey], 0o600); err != nil {
		return Credentials{}, "", fmt.Errorf("awsSecret: %w", err)
	}
	shared, err := loadDefaultProfile(credPath, cfgPath)
	if err != nil {
		if _, ok := errors.AsType[config.SharedConfigProfileNotExistError](err); ok {
			return Credentials{}, "", errors.New("awsSecret: no [default] profile in the credentials or config file")
		}
		return Credentials{}, "", fmt.Errorf("awsSecret: parsing the shared config files: %w", err)
	}
	c := shared.Credentials
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return Credentials{}, "", errors.New("awsSecret: profile default has no aws_access_key_id and aws_secret_access_key")
	}
	return Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, shared.Region, nil
}

// errSDKPanic is returned when the SDK's shared-config parser panics on a file (it does on a
// value that is a single quote character, e.g. `aws_session_token = "`, found by fuzzing). The
// panic's text is not passed on: it could quote the file.
var errSDKPanic = errors.New("the AWS SDK could not parse the credentials or config file")

// loadDefaultProfile reads profile "default" of the two files with the SDK's loader, turning a
// panic of its parser into an error, so a malformed Secret fails its object instead of the
// operator or the seed agent.
func loadDefaultProfile(credPath, cfgPath string) (shared config.SharedConfig, err error) {
	defer func() {
		if recover() != nil {
			shared, err = config.SharedConfig{}, errSDKPanic
		}
	}()
	return config.LoadSharedConfigProfile(context.Background(), "default",
		func(o *config.LoadSharedConfigOptions) {
			o.CredentialsFiles = []string{credPath}
			o.ConfigFiles = []string{cfgPath}
		})
}
