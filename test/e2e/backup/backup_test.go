//go:build e2e

// Package backup runs the backup operator as deployed on the cluster against an etcd pod and a
// MinIO server that the test starts on the node's bridge address, where pods can reach it.
package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	minioUser     = "e2e-backup"
	minioPassword = "e2e-backup-secret-key"
	keys          = 2000
)

// startMinIO runs the MinIO binary hack/objstores.sh installed on host:port (the node's bridge
// address, reachable from pods) and returns its endpoint and an S3 client.
func startMinIO(t *testing.T, root, host string) (string, *s3.Client) {
	t.Helper()
	bins, _ := filepath.Glob(filepath.Join(root, ".cache", "objstores", "minio-*", "minio"))
	if len(bins) == 0 {
		t.Skip("MinIO not installed: run hack/objstores.sh up once")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on the node address %s: %v", host, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	cmd := exec.Command(bins[0], "server", "--quiet", "--address", addr, filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword, "MINIO_BROWSER=off")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := "http://" + addr
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(minioUser, minioPassword, ""),
	})
	framework.Eventually(t, time.Minute, "MinIO at "+endpoint, func(ctx context.Context) (bool, error) {
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		return err == nil, nil
	})
	return endpoint, c
}

// TestBackupEtcdPodToMinIO: an EtcdBackup by etcdEndpoints of a 1-member etcd pod completes
// through the deployed backup operator; the object in MinIO has the status's sha256 and
// restores with etcdutl into a member holding every key.
func TestBackupEtcdPodToMinIO(t *testing.T) {
	f := framework.Global(t)
	nodeIP, _, err := net.SplitHostPort(f.ClusterDNS)
	if err != nil {
		t.Fatal(err)
	}
	endpoint, s3c := startMinIO(t, f.RootDir, nodeIP)
	ctx := t.Context()
	bucket := fmt.Sprintf("e2e-backup-%d", time.Now().UnixNano())
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}

	ns := f.CreateNamespace(t, "backup")
	f.Create(t, framework.HeadlessService(ns, "db", map[string]string{"app": "backup-e2e"}, 2379))
	f.Create(t, framework.SingleEtcdPod(ns, "db-0", "db", map[string]string{"app": "backup-e2e"},
		fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))))
	f.WaitForPodReady(t, ns, "db-0", 2*time.Minute)
	member := fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{member}, DialTimeout: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(f.DialTCP)}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	snapshottest.Put(t, cli, "/e2e/", keys, 256)

	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: map[string][]byte{
		"credentials": fmt.Appendf(nil, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", minioUser, minioPassword),
		"config":      []byte("[default]\nregion = us-east-1\n"),
	}})
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{member},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{
				Path: bucket + "/etcd.backup", AWSSecret: "aws", Endpoint: endpoint, ForcePathStyle: true,
			}},
		},
	})
	b := &etcdv1beta2.EtcdBackup{}
	framework.Eventually(t, 3*time.Minute, "EtcdBackup Completed", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "once"}, b); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			return false, fmt.Errorf("backup failed: %s", b.Status.Reason)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseCompleted, nil
	})

	obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("etcd.backup")})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	file := filepath.Join(t.TempDir(), "snapshot.db")
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), obj.Body)
	_ = out.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != b.Status.SHA256 || n != b.Status.Size {
		t.Fatalf("object sha256/size %s/%d, status %s/%d", sum, n, b.Status.SHA256, b.Status.Size)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command(snapshottest.Bin(t, "etcdutl"), "snapshot", "restore", file, "--data-dir", restored).CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	e := snapshottest.StartEtcd(t, restored)
	resp, err := e.Client(t).Get(ctx, "/e2e/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != keys {
		t.Fatalf("restored member holds %v keys (err %v), want %d", resp, err, keys)
	}
	t.Logf("backup of %s: %d bytes at revision %d in %s", member, b.Status.Size, b.Status.EtcdRevision, b.Status.Duration.Duration)
}
