//go:build e2e

package restore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestAutoTLS: a TLS.auto cluster on the local cluster (issue 18 item 3).
//  1. The operator makes the CA and the certificates; the 3 members form over TLS with client
//     certificates required, and a client with the cluster's operator-tls Secret reads and writes.
//  2. A server certificate near its expiry is issued again by the operator and reaches every
//     member while a writer keeps writing: the cluster stays Available, no acknowledged write is
//     lost, and each member then serves the new certificate.
//  3. An EtcdBackup naming the cluster and an EtcdRestore into a new name succeed; the copy has
//     certificates of its own (another CA, its own names) and holds the data.
func TestAutoTLS(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "autotls")
	ctx := t.Context()

	db := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 3,
		TLS: &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{Validity: &metav1.Duration{Duration: 2 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 30 * time.Minute}}}}}
	f.Create(t, db)
	start := time.Now()
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	t.Logf("MEASURE TLS.auto create -> Available (size 3): %s", time.Since(start).Round(100*time.Millisecond))
	cli := tlsClient(t, f, ns, "db", clientURL(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, 300)
	want := framework.KeyspaceSHA256(t, cli, prefix)

	// 2. Renewal under load: the server certificate 6 minutes from expiry.
	caSecret := secret(t, f, ns, "db-ca")
	ca, err := certs.ParseCA(caSecret.Data["ca.crt"], caSecret.Data["ca.key"])
	if err != nil {
		t.Fatal(err)
	}
	w := framework.StartWriter(cli, "/tls-writes/")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := secret(t, f, ns, "db-server-tls")
		crt, key, err := ca.Issue(certs.Leaf{CommonName: "db server", DNSNames: served(t, f, memberURL(ns, "db", "db-0")).DNSNames, Server: true, Client: true}, time.Now(), 6*time.Minute)
		if err != nil {
			return err
		}
		s.Data["server.crt"], s.Data["server.key"] = crt, key
		return f.Client.Update(ctx, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	touched := time.Now()
	touch(t, f, ns, "db") // a pass now, not at the next steady re-check
	var renewed *big.Int
	framework.Eventually(t, time.Minute, "server certificate renewed", func(context.Context) (bool, error) {
		s := secret(t, f, ns, "db-server-tls")
		if left := time.Until(certs.NotAfter(s.Data["server.crt"])); left < time.Hour {
			return false, fmt.Errorf("server certificate valid for %s more", left)
		}
		renewed = certSerial(t, s.Data["server.crt"])
		return true, nil
	})
	waitServed(t, f, ns, renewed)
	t.Logf("MEASURE TLS.auto renewal reached every member: %s after the operator's pass", time.Since(touched).Round(time.Second))
	w.Finish(t)
	f.WaitClusterAvailable(t, ns, "db", 3, time.Minute)

	// 3. Backup and a restore into a new name.
	backupAndCopy(t, f, stores, ns)
	copyCA := secret(t, f, ns, "db-copy-ca")
	if string(copyCA.Data["ca.crt"]) == string(caSecret.Data["ca.crt"]) {
		t.Fatal("the copy shares the original's CA")
	}
	copyCli := tlsClient(t, f, ns, "db-copy", clientURL(ns, "db-copy"))
	if got := framework.KeyspaceSHA256(t, copyCli, prefix); got != want {
		t.Fatalf("the copy's keyspace %s differs from the original's %s", got, want)
	}
}

// backupAndCopy backs up cluster db of ns into S3 (EtcdBackup db-backup) and restores that
// backup into the new name db-copy (EtcdRestore copy), which must verify its 3 members.
func backupAndCopy(t *testing.T, f *framework.Framework, stores *framework.ObjStores, ns string) {
	t.Helper()
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-backup"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("db/etcd.backup", "aws")}})
	f.WaitBackupCompleted(t, ns, "db-backup", 3*time.Minute)
	f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "db-copy"}, ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "db"},
		BackupRef: &etcdv1beta2.LocalObjectReference{Name: "db-backup"}}})
	rs := f.WaitRestoreSucceeded(t, ns, "copy", 8*time.Minute)
	if v := rs.Status.Verification; v == nil || !v.Passed || v.MembersVerified != 3 {
		t.Fatalf("verification %+v", rs.Status.Verification)
	}
	t.Logf("restore into a new name: RTO %s", rs.Status.Duration.Duration)
}

// waitServed waits until each member of the 3-member cluster db of ns serves the certificate
// with serial in a new TLS handshake.
func waitServed(t *testing.T, f *framework.Framework, ns string, serial *big.Int) {
	t.Helper()
	for _, m := range []string{"db-0", "db-1", "db-2"} {
		framework.Eventually(t, 4*time.Minute, m+" serves the renewed certificate", func(context.Context) (bool, error) {
			// A handshake that fails is tried again: while the kubelet swaps the member's
			// mounted certificate and key, etcd, which reads both files at each handshake, can
			// read one old and one new and refuse that handshake ("tls: internal error").
			got, err := servedCert(t.Context(), f, memberURL(ns, "db", m))
			switch {
			case err != nil:
				return false, err
			case got.SerialNumber.Cmp(serial) != 0:
				return false, fmt.Errorf("%s serves certificate %x, want %x", m, got.SerialNumber, serial)
			}
			return true, nil
		})
	}
}

func secret(t *testing.T, f *framework.Framework, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := f.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
	return s
}

func clientURL(ns, name string) string {
	return fmt.Sprintf("https://%s:2379", framework.ServiceDNSName(name+"-client", ns))
}

func memberURL(ns, cluster, pod string) string {
	return fmt.Sprintf("https://%s:2379", framework.PodDNSName(pod, cluster, ns))
}

// tlsClient connects with the client certificate of the cluster's operator-tls Secret.
func tlsClient(t *testing.T, f *framework.Framework, ns, name string, endpoints ...string) *clientv3.Client {
	t.Helper()
	cfg, err := snapshot.TLSConfigFromSecret(secret(t, f, ns, name+etcdv1beta2.AutoTLSOperatorSuffix).Data)
	if err != nil {
		t.Fatal(err)
	}
	return etcdClientWith(t, f, cfg, endpoints...)
}

// etcdClientWith is a client of endpoints with TLS configuration cfg.
func etcdClientWith(t *testing.T, f *framework.Framework, cfg *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, TLS: cfg, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(f.DialTCP)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// served returns the certificate the member at url presents in a new TLS handshake.
func served(t *testing.T, f *framework.Framework, url string) *certSummary {
	t.Helper()
	c, err := servedCert(t.Context(), f, url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servedCert is the certificate the member at url presents.
func servedCert(ctx context.Context, f *framework.Framework, url string) (*certSummary, error) {
	host := url[len("https://"):]
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := f.DialTCP(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", host, err)
	}
	defer raw.Close()
	// Only reads the certificate the member presents; nothing is sent.
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
	if err := conn.HandshakeContext(ctx); err != nil {
		// The member requires a client certificate; the server's arrives before that check.
		if st := conn.ConnectionState(); len(st.PeerCertificates) == 0 {
			return nil, fmt.Errorf("handshake with %s: %w", host, err)
		}
	}
	c := conn.ConnectionState().PeerCertificates[0]
	return &certSummary{SerialNumber: c.SerialNumber, DNSNames: c.DNSNames}, nil
}

type certSummary struct {
	SerialNumber *big.Int
	DNSNames     []string
}

func certSerial(t *testing.T, pemData []byte) *big.Int {
	t.Helper()
	return parseCert(t, pemData).SerialNumber
}

func parseCert(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
