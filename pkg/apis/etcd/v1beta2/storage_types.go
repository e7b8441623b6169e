package v1beta2

// BackupStorageType names the object store that holds backups.
//
// +kubebuilder:validation:Enum=S3;ABS;GCS;OSS;PVC
type BackupStorageType string

// Storage types, with the names coreos/etcd-operator used.
const (
	BackupStorageTypeS3  BackupStorageType = "S3"
	BackupStorageTypeABS BackupStorageType = "ABS"
	BackupStorageTypeGCS BackupStorageType = "GCS"
	// BackupStorageTypeOSS is Alibaba Cloud Object Storage Service, reached through its S3
	// protocol (see OSSSource).
	BackupStorageTypeOSS BackupStorageType = "OSS"
	// BackupStorageTypePVC is a PersistentVolumeClaim of the object's namespace, reached through
	// a small server pod the backup operator runs on it (see PVCSource). Not a coreos type.
	BackupStorageTypePVC BackupStorageType = "PVC"
)

// Keys of the credential Secrets, in the formats coreos/etcd-operator users already have.
const (
	// AWSSecretCredentialsFileName is the key of the AWS shared credentials file (profile default).
	AWSSecretCredentialsFileName = "credentials"
	// AWSSecretConfigFileName is the key of the AWS shared config file (profile default).
	AWSSecretConfigFileName = "config"
	// AzureSecretStorageAccount is the key of the Azure storage account name.
	AzureSecretStorageAccount = "storage-account"
	// AzureSecretStorageKey is the key of the Azure storage account key.
	AzureSecretStorageKey = "storage-key"
	// AzureCloudKey is the key of the Azure cloud name (AzurePublicCloud when absent).
	AzureCloudKey = "cloud"
	// GCPAccessToken is the key of a GCP OAuth2 access token.
	GCPAccessToken = "access-token"
	// GCPCredentialsJSON is the key of a GCP service account key file.
	GCPCredentialsJSON = "credentials.json"
	// OSSSecretAccessKeyID is the key of an Alibaba Cloud AccessKey ID.
	OSSSecretAccessKeyID = "accessKeyID"
	// OSSSecretAccessKeySecret is the key of an Alibaba Cloud AccessKey secret.
	OSSSecretAccessKeySecret = "accessKeySecret"
)

// Keys of a client TLS Secret (EtcdBackup clientTLSSecret, TLS.static.operatorSecret).
const (
	ClientTLSCertKey = "etcd-client.crt"
	ClientTLSKeyKey  = "etcd-client.key"
	ClientTLSCAKey   = "etcd-client-ca.crt"
)

// Keys of an etcd credentials Secret (auth.secretName of an EtcdCluster or an EtcdBackup), those
// of the kubernetes.io/basic-auth Secret type.
const (
	AuthUsernameKey = "username"
	AuthPasswordKey = "password"
	// DefaultAuthUsername is the user when the Secret has no username: etcd's root user, the
	// one etcd requires before it enables authentication.
	DefaultAuthUsername = "root"
)

// S3Source says where a backup lives in S3 or an S3-compatible store and how to reach it.
type S3Source struct {
	// path is "<bucket>/<key>". For a one-shot backup it is the object's key; for a periodic
	// backup or a schedule, the key is a prefix to which each backup adds a timestamp and revision.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^/]+/.+$')",message="path must be <bucket>/<key>, e.g. mybucket/etcd.backup"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",message="path must not have '.' or '..' segments or empty segments ('//'): object stores take them literally, so the backup would not be where the path seems to say"
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// awsSecret is the Secret with the AWS files `credentials` and `config` (profile default).
	// Unset: the operator's ambient credentials (environment, web identity, instance role).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	AWSSecret string `json:"awsSecret,omitempty"`

	// endpoint of an S3-compatible store (e.g. http://minio.minio:9000). Unset: AWS S3.
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/]+')",message="endpoint must be an http:// or https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@')",message="endpoint must not carry credentials (user:password@host): put them in the credentials Secret"
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint,omitempty"`

	// forcePathStyle uses path-style URLs (endpoint/bucket/key) instead of bucket subdomains,
	// which most S3-compatible stores need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// endpointCA is a key of a Secret in this namespace holding PEM CA certificates that the
	// operators trust, on top of the public roots, for the endpoint's HTTPS certificate: an
	// on-prem MinIO or Ceph RGW behind a private CA, or a TLS-inspecting proxy. The backup operator, the
	// restore operator and the restore's seed pod all use it. Unset: the public roots only.
	// +optional
	EndpointCA *SecretKeySelector `json:"endpointCA,omitempty"`

	// objectLock stores every backup and continuous-capture segment written here under S3
	// Object Lock retention (write once, read many): no one, the operator and whoever holds
	// its credentials included, can delete or overwrite the stored version until retainDays
	// after its upload. The bucket must have been created with Object Lock enabled (which also
	// turns on versioning); an upload to one without fails and says so. Retention and pruning
	// still run: their deletes add delete markers, so a backup leaves the listing while its
	// locked version stays in the bucket until its retention ends (expire noncurrent versions
	// with a lifecycle rule). Ignored when reading.
	// +optional
	ObjectLock *S3ObjectLock `json:"objectLock,omitempty"`
}

// S3ObjectLock is the Object Lock retention of the objects written.
type S3ObjectLock struct {
	// mode is Governance (users with s3:BypassGovernanceRetention may still delete early) or
	// Compliance (no one can, not even the account's root user, until the date).
	// +kubebuilder:validation:Enum=Governance;Compliance
	// +required
	Mode S3ObjectLockMode `json:"mode"`
	// retainDays is how long after its upload each object is retained.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=36500
	// +required
	RetainDays int32 `json:"retainDays"`
}

// S3ObjectLockMode is an S3 Object Lock retention mode.
type S3ObjectLockMode string

// Object Lock modes.
const (
	S3ObjectLockGovernance S3ObjectLockMode = "Governance"
	S3ObjectLockCompliance S3ObjectLockMode = "Compliance"
)

// ABSSource says where a backup lives in Azure Blob Storage and how to reach it.
type ABSSource struct {
	// path is "<container>/<blob>", read like S3Source.path.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^/]+/.+$')",message="path must be <container>/<blob>, e.g. mycontainer/etcd.backup"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",message="path must not have '.' or '..' segments or empty segments ('//'): object stores take them literally, so the backup would not be where the path seems to say"
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// absSecret is the Secret with `storage-account`, `storage-key` and optionally `cloud`
	// (AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud). Unset: ambient credentials.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ABSSecret string `json:"absSecret,omitempty"`

	// endpoint overrides the blob service URL (e.g. an Azurite emulator). Unset: derived from
	// the account and cloud.
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/]+')",message="endpoint must be an http:// or https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@')",message="endpoint must not carry credentials (user:password@host): put them in the credentials Secret"
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint,omitempty"`

	// endpointCA is a key of a Secret in this namespace holding PEM CA certificates that the
	// operators trust, on top of the public roots, for the endpoint's HTTPS certificate: an
	// on-prem Azure Stack Hub or Azurite behind a private CA, or a TLS-inspecting proxy. The backup operator, the
	// restore operator and the restore's seed pod all use it. Unset: the public roots only.
	// +optional
	EndpointCA *SecretKeySelector `json:"endpointCA,omitempty"`
}

// GCSSource says where a backup lives in Google Cloud Storage and how to reach it.
type GCSSource struct {
	// path is "<bucket>/<object>", read like S3Source.path.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^/]+/.+$')",message="path must be <bucket>/<object>, e.g. mybucket/etcd.backup"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",message="path must not have '.' or '..' segments or empty segments ('//'): object stores take them literally, so the backup would not be where the path seems to say"
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// gcpSecret is the Secret with at most one of `access-token` and `credentials.json`.
	// Unset: application default credentials.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	GCPSecret string `json:"gcpSecret,omitempty"`

	// endpoint overrides the storage API URL (e.g. a fake-gcs-server emulator).
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/]+')",message="endpoint must be an http:// or https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@')",message="endpoint must not carry credentials (user:password@host): put them in the credentials Secret"
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint,omitempty"`

	// endpointCA is a key of a Secret in this namespace holding PEM CA certificates that the
	// operators trust, on top of the public roots, for the endpoint's HTTPS certificate: an
	// on-prem GCS-compatible store behind a private CA, or a TLS-inspecting proxy. The backup operator, the
	// restore operator and the restore's seed pod all use it. Unset: the public roots only.
	// +optional
	EndpointCA *SecretKeySelector `json:"endpointCA,omitempty"`
}

// OSSSource says where a backup lives in Alibaba Cloud Object Storage Service (OSS) and how to
// reach it: coreos/etcd-operator's OSSBackupSource and OSSRestoreSource (its master branch, after
// v0.9.4). The operators speak OSS's S3-compatible protocol, so backups, keys and retention are
// those of S3.
type OSSSource struct {
	// path is "<bucket>/<key>", read like S3Source.path.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^/]+/.+$')",message="path must be <bucket>/<key>, e.g. mybucket/etcd.backup"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",message="path must not have '.' or '..' segments or empty segments ('//'): object stores take them literally, so the backup would not be where the path seems to say"
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// ossSecret is the Secret with an Alibaba Cloud AccessKey: `accessKeyID` and
	// `accessKeySecret`. Required: the operators have no ambient Alibaba Cloud identity.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	OSSSecret string `json:"ossSecret"`

	// endpoint is the OSS region endpoint, e.g. https://oss-cn-hangzhou.aliyuncs.com (or its
	// S3-compatible form https://s3.oss-cn-hangzhou.aliyuncs.com, or -internal). Unset:
	// https://oss-cn-hangzhou.aliyuncs.com, the region coreos/etcd-operator defaulted to. An
	// aliyuncs.com endpoint is reached at its S3-compatible host with bucket subdomains, signed for
	// the region its name carries; any other host is taken for an S3-compatible stand-in (MinIO)
	// and addressed path-style.
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/]+')",message="endpoint must be an http:// or https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@')",message="endpoint must not carry credentials (user:password@host): put them in the credentials Secret"
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint,omitempty"`

	// endpointCA is a key of a Secret in this namespace holding PEM CA certificates that the
	// operators trust, on top of the public roots, for the endpoint's HTTPS certificate: a
	// TLS-inspecting proxy, or an S3-compatible stand-in behind a private CA. The backup operator, the
	// restore operator and the restore's seed pod all use it. Unset: the public roots only.
	// +optional
	EndpointCA *SecretKeySelector `json:"endpointCA,omitempty"`
}

// PVCSource says where backups live on a PersistentVolumeClaim: for bare-metal and air-gapped
// clusters with no object store. The claim must be in the namespace of the object that names
// it. While anything names it (an EtcdBackupSchedule, a periodic or unfinished EtcdBackup, an
// unfinished EtcdRestore, an EtcdCluster restoring from it), the backup operator keeps a server
// pod on the claim (`<claim>` mounted at /backups, Pod Security restricted) with a Service and
// a Secret, all three owned by the claim and named etcd-backup-volume-<hash of the claim's
// name>; the operators and the restore steps reach the files only through it, over HTTPS
// pinned to the server's own certificate and with a bearer token from the Secret (docs/backends.md,
// "Backups to a PersistentVolumeClaim"). Backups are files named like object keys; retention,
// Newest, drills and restores read them as they read a bucket.
type PVCSource struct {
	// claimName is the PersistentVolumeClaim, in this namespace, that holds the backups. Use a
	// ReadWriteOnce claim only if one pod at a time may mount it: the server pod holds it while
	// anything names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	ClaimName string `json:"claimName"`

	// path is the file's path inside the volume, read like the key of S3Source.path: for a
	// one-shot backup the file, for a periodic backup or a schedule the prefix each backup adds
	// its time and revision to. Relative, '/'-separated, no '.' or '..' segments.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/')",message="path is relative to the volume's root and names a file or a prefix: no leading or trailing '/'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",message="path must not have '.' or '..' segments or empty segments ('//')"
	// +required
	Path string `json:"path"`
}

// BackupSource holds exactly one object-store location, matching the storage type.
type BackupSource struct {
	// s3 is the location when the storage type is S3.
	// +optional
	S3 *S3Source `json:"s3,omitempty"`
	// abs is the location when the storage type is ABS.
	// +optional
	ABS *ABSSource `json:"abs,omitempty"`
	// gcs is the location when the storage type is GCS.
	// +optional
	GCS *GCSSource `json:"gcs,omitempty"`
	// oss is the location when the storage type is OSS.
	// +optional
	OSS *OSSSource `json:"oss,omitempty"`
	// pvc is the location when the storage type is PVC.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
	// encryption encrypts the backups and continuous-capture segments written here on the
	// client, with age (https://age-encryption.org: X25519, ChaCha20-Poly1305 in 64 KiB
	// authenticated chunks), and names the keys to read them with. Reading recognises an
	// encrypted object by its first bytes, so a prefix may hold plain and encrypted objects; an
	// encrypted object read without the right identity fails with DecryptionFailed before
	// anything is changed. Decrypt by hand with `age -d -i identity.txt` (docs/backups.md,
	// "Compression and encryption").
	// +optional
	Encryption *BackupEncryption `json:"encryption,omitempty"`
}

// BackupEncryption names the Secret with the age keys of encrypted backups.
type BackupEncryption struct {
	// secretName is a Secret in the same namespace with the keys, as age-keygen writes them:
	// `identity` holds one or more X25519 identities (AGE-SECRET-KEY-1...) that decrypt,
	// `recipients` optionally one or more public keys (age1..., one per line) to encrypt to.
	// Writing encrypts to `recipients` when the Secret has it, else to the public keys of the
	// identities; reading needs `identity`. A Secret with `recipients` only lets the backup
	// operator write backups it cannot read (its check against the live cluster is then
	// skipped, and says so).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	SecretName string `json:"secretName"`
}

// Keys of the Secret that BackupEncryption names.
const (
	// EncryptionIdentityKey holds age X25519 identities, one per line (comments allowed).
	EncryptionIdentityKey = "identity"
	// EncryptionRecipientsKey holds age recipients (public keys), one per line.
	EncryptionRecipientsKey = "recipients"
)

// BackupCompression is how the backups and segments written are compressed.
//
// +kubebuilder:validation:Enum=None;Zstd
type BackupCompression string

// Compressions.
const (
	CompressionNone BackupCompression = "None"
	CompressionZstd BackupCompression = "Zstd"
)

// EtcdClusterRef names an EtcdCluster in the same namespace.
type EtcdClusterRef struct {
	// name of the EtcdCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// LocalObjectReference names an object of a known kind in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// SecretKeySelector names one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
	// key in the Secret's data. Default: ca.crt.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:default=ca.crt
	// +optional
	Key string `json:"key,omitempty"`
}

// DefaultCAKey is the key of a SecretKeySelector for a CA bundle when none is given.
const DefaultCAKey = "ca.crt"
