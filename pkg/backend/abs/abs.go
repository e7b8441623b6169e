// Package abs is a backend.Backend on Azure Blob Storage (and the Azurite emulator), storing
// objects as block blobs uploaded with azblob's UploadStream.
package abs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

const (
	// DefaultBlockSize is the block size when Config.BlockSize is 0. With Azure's limit of
	// 50,000 blocks per blob it allows blobs up to ~390 GiB.
	DefaultBlockSize = 8 << 20
	// DefaultConcurrency is the number of blocks staged in parallel when Config.Concurrency is 0.
	DefaultConcurrency = 4
)

// Config configures the Azure Blob provider.
type Config struct {
	// Container is the blob container name.
	Container string
	// Account is the storage account name.
	Account string
	// Key is the account's shared key (from an absSecret). Empty uses the SDK's default
	// credential chain (environment, workload identity, managed identity, Azure CLI), which
	// needs a role such as Storage Blob Data Contributor on the container.
	Key SharedKey
	// Cloud names the Azure cloud: AzurePublicCloud (default), AzureUSGovernmentCloud,
	// AzureChinaCloud or AzureGermanCloud. It picks the endpoint suffix.
	Cloud string
	// Endpoint overrides the blob service URL (normally https://<account>.blob.<suffix>/),
	// e.g. "http://127.0.0.1:10000/devstoreaccount1" for Azurite.
	Endpoint string
	// BlockSize is the block size in bytes; 0 means DefaultBlockSize.
	BlockSize int64
	// Concurrency is the number of blocks staged in parallel; 0 means DefaultConcurrency.
	Concurrency int
	// ListPageSize is the number of blobs per listing request; 0 means the server's (5000).
	ListPageSize int32
	// CABundle is PEM certificates trusted on top of the system's roots for HTTPS, for an
	// endpoint behind a private CA; nil trusts the system's roots only.
	CABundle []byte
}

func (c *Config) validate() error {
	if c.Container == "" || c.Account == "" {
		return errors.New("abs: Container and Account are required")
	}
	if c.BlockSize < 0 || c.Concurrency < 0 || c.ListPageSize < 0 {
		return errors.New("abs: BlockSize, Concurrency and ListPageSize must not be negative")
	}
	if _, err := lookupCloud(c.Cloud); err != nil {
		return err
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("abs: Endpoint %q is not an absolute URL", c.Endpoint)
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
}

// MemoryBound returns the most upload buffer memory a Put holds: Concurrency blocks. azblob
// allocates them with mmap, outside the Go heap: they count in the process's RSS.
func (c *Config) MemoryBound() int64 {
	cc := *c
	cc.setDefaults()
	return int64(cc.Concurrency) * cc.BlockSize
}

// serviceURL is the blob service URL for the config.
func (c *Config) serviceURL() string {
	if c.Endpoint != "" {
		return strings.TrimSuffix(c.Endpoint, "/")
	}
	cl, _ := lookupCloud(c.Cloud) // checked by validate
	return "https://" + c.Account + ".blob." + cl.suffix
}

// Backend stores objects as block blobs in one container.
type Backend struct {
	cfg       Config
	container *container.Client
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend for cfg. It makes no request: a missing container or bad credentials
// show up on first use.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	containerURL := cfg.serviceURL() + "/" + url.PathEscape(cfg.Container)
	opts, err := clientOptions(cfg.CABundle)
	if err != nil {
		return nil, err
	}
	var client *container.Client
	if cfg.Key != "" {
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(cfg.Account, string(cfg.Key))
		if err != nil {
			// Not wrapped: the SDK's message can quote the key.
			return nil, errors.New("abs: storage key is not valid base64")
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, &container.ClientOptions{ClientOptions: opts})
	} else {
		client, err = newAmbientClient(containerURL, cfg.Cloud, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("abs: creating client for %s: %w", containerURL, err)
	}
	return &Backend{cfg: cfg, container: client}, nil
}

func newAmbientClient(containerURL, cloudName string, opts azcore.ClientOptions) (*container.Client, error) {
	cl, _ := lookupCloud(cloudName)
	if cl.config == nil {
		return nil, fmt.Errorf("cloud %s has no Entra ID endpoint: use a storage key", cloudName)
	}
	opts.Cloud = *cl.config
	cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: opts})
	if err != nil {
		return nil, err
	}
	return container.NewClient(containerURL, cred, &container.ClientOptions{ClientOptions: opts})
}

// notFound marks a missing blob with backend.ErrNotFound and refused credentials with
// backend.ErrPermissionDenied.
func classify(err error) error {
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("%w: %w", backend.ErrNotFound, err)
	}
	if re, ok := errors.AsType[*azcore.ResponseError](err); ok {
		return backend.MarkStatus(err, re.StatusCode)
	}
	return err
}

// Put implements backend.Backend with UploadStream: blocks are staged as they are read and
// committed with one Put Block List at the end, so a failed stream leaves no blob (the staged
// blocks stay uncommitted and the service discards them).
func (b *Backend) Put(ctx context.Context, key string, r io.Reader) error {
	if err := backend.ValidateKey(key); err != nil {
		return fmt.Errorf("abs: putting %q: %w", key, err)
	}
	ur := backend.NewUploadReader(ctx, r)
	_, err := b.container.NewBlockBlobClient(key).UploadStream(ctx, ur, &blockblob.UploadStreamOptions{
		BlockSize:   b.cfg.BlockSize,
		Concurrency: b.cfg.Concurrency,
	})
	if err != nil {
		return fmt.Errorf("abs: putting %q in container %s: %w", key, b.cfg.Container, classify(ur.Cause(err)))
	}
	return nil
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return b.download(ctx, key, blob.HTTPRange{})
}

// GetRange implements backend.Backend.
func (b *Backend) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, fmt.Errorf("abs: getting %q range: %w", key, err)
	}
	if length < 0 {
		length = 0 // HTTPRange: a zero count means to the end
	}
	return b.download(ctx, key, blob.HTTPRange{Offset: offset, Count: length})
}

func (b *Backend) download(ctx context.Context, key string, rng blob.HTTPRange) (io.ReadCloser, error) {
	resp, err := b.container.NewBlobClient(key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		return nil, fmt.Errorf("abs: getting %q from container %s: %w", key, b.cfg.Container, classify(err))
	}
	// The retry reader resumes an interrupted body with a range request at the failed offset.
	return resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3}), nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	props, err := b.container.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("abs: stat %q in container %s: %w", key, b.cfg.Container, classify(err))
	}
	return backend.ObjectInfo{Key: key, Size: deref(props.ContentLength), ModTime: deref(props.LastModified)}, nil
}

// List implements backend.Backend, following every page.
func (b *Backend) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	opts := &container.ListBlobsFlatOptions{Prefix: &prefix}
	if b.cfg.ListPageSize > 0 {
		opts.MaxResults = &b.cfg.ListPageSize
	}
	infos := []backend.ObjectInfo{}
	for p := b.container.NewListBlobsFlatPager(opts); p.More(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("abs: listing %q in container %s: %w", prefix, b.cfg.Container, classify(err))
		}
		for _, item := range page.Segment.BlobItems {
			info := backend.ObjectInfo{Key: deref(item.Name)}
			if item.Properties != nil {
				info.Size = deref(item.Properties.ContentLength)
				info.ModTime = deref(item.Properties.LastModified)
			}
			infos = append(infos, info)
		}
	}
	backend.SortObjects(infos)
	return infos, nil
}

// Delete implements backend.Backend, with the blob's snapshots if it has any.
func (b *Backend) Delete(ctx context.Context, key string) error {
	_, err := b.container.NewBlobClient(key).Delete(ctx, &blob.DeleteOptions{
		DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude),
	})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("abs: deleting %q from container %s: %w", key, b.cfg.Container, classify(err))
	}
	return nil
}

// Close implements backend.Backend; the SDK client holds nothing that needs closing.
func (b *Backend) Close() error { return nil }

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
