package restoreseed

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// quietStderr discards what flag prints on a parse error (usage) for the rest of the test.
func quietStderr(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = devNull
	t.Cleanup(func() { os.Stderr = stderr; _ = devNull.Close() })
}

// FuzzRestoreArgs: the flags the restore operator writes into the seed pod (seedPod in
// internal/controller/etcdrestore: every flag as --name=value) parse back into the same
// Options for any values, and the required ones are enforced.
func FuzzRestoreArgs(f *testing.F) {
	f.Add("S3", "bk", "team/etcd.backup", "https://minio:9000", "aws", "/etc/etcd-restore/secrets", int64(1234), "ab12",
		"/var/etcd/data", "demo-3", "demo-3=https://demo-3.demo:2380", "uid-1", "https://demo-3.demo:2380", int64(time.Hour))
	f.Add("GCS", "b", "k", "", "", "", int64(-1), "", "", "-n", "a=b,c=d", "", "--x", int64(-1<<63))
	f.Add("ABS", "c", "k=v --name", "", "", "-", int64(1<<63-1), "--sha256", "=", "=", "=", "=", "=", int64(1))
	f.Add("S3", "", "k", "", "", "", int64(0), "", "", "", "", "", "", int64(0))
	f.Fuzz(func(t *testing.T, typ, bucket, key, endpoint, secret, secretsDir string, size int64, sha, dataDir, name,
		initialCluster, token, peer string, timeout int64) {
		for _, s := range []string{typ, bucket, key, endpoint, secret} {
			if !utf8.ValidString(s) {
				t.Skip() // a location's fields come from Kubernetes objects: always UTF-8
			}
		}
		quietStderr(t)
		loc := storage.Location{Type: etcdv1beta2.BackupStorageType(typ), Bucket: bucket, Key: key, Endpoint: endpoint, Secret: secret}
		args := []string{
			"--location=" + loc.Encode(), "--secrets-dir=" + secretsDir, "--size=" + strconv.FormatInt(size, 10),
			"--sha256=" + sha, "--data-dir=" + dataDir, "--name=" + name, "--initial-cluster=" + initialCluster,
			"--initial-cluster-token=" + token, "--initial-advertise-peer-urls=" + peer,
			"--timeout=" + time.Duration(timeout).String(),
		}
		o, err := ParseRestoreArgs(args)
		if name == "" || initialCluster == "" || peer == "" {
			if err == nil {
				t.Fatalf("ParseRestoreArgs(%q) accepted without a required flag", args)
			}
			return
		}
		wantLoc, locErr := storage.Decode(loc.Encode())
		if locErr != nil {
			if err == nil || !strings.Contains(err.Error(), "--location") {
				t.Fatalf("ParseRestoreArgs(%q) = %v, want an error about --location", args, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseRestoreArgs(%q): %v", args, err)
		}
		want := &Options{Location: wantLoc, SecretsDir: secretsDir, Expect: Expect{Size: size, SHA256: sha}, DataDir: dataDir,
			Name: name, InitialCluster: initialCluster, ClusterToken: token, PeerURL: peer,
			Etcdutl: "/usr/local/bin/etcdutl", ResultFile: "/dev/termination-log", Timeout: time.Duration(timeout)}
		if !reflect.DeepEqual(o, want) {
			t.Fatalf("ParseRestoreArgs(%q) = %+v, want %+v", args, o, want)
		}
	})
}

// FuzzParseRestoreArgs: any argument list parses without panicking, and what it accepts has
// the required flags and a valid location. Arguments are the input split at NUL bytes.
func FuzzParseRestoreArgs(f *testing.F) {
	loc := storage.Location{Type: "S3", Bucket: "b", Key: "k"}.Encode()
	for _, s := range []string{
		"--location=" + loc + "\x00--name=a\x00--initial-cluster=a=http://a:2380\x00--initial-advertise-peer-urls=http://a:2380",
		"-location\x00" + loc + "\x00-name\x00a\x00-initial-cluster\x00x\x00-initial-advertise-peer-urls\x00p\x00-timeout\x001h",
		"--location={}\x00--name=a\x00--initial-cluster=x\x00--initial-advertise-peer-urls=p",
		"-h", "--size=x", "--timeout=9999999999h", "--", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		quietStderr(t)
		args := strings.Split(joined, "\x00")
		o, err := ParseRestoreArgs(args)
		if err != nil {
			return
		}
		if o.Name == "" || o.InitialCluster == "" || o.PeerURL == "" {
			t.Fatalf("ParseRestoreArgs(%q) accepted without a required flag: %+v", args, o)
		}
		if again, err := storage.Decode(o.Location.Encode()); err != nil || !reflect.DeepEqual(again, o.Location) {
			t.Fatalf("ParseRestoreArgs(%q) accepted location %+v that does not decode again: %v", args, o.Location, err)
		}
	})
}
