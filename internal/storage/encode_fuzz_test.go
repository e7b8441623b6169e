package storage

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

var storageTypes = []etcdv1beta2.BackupStorageType{
	etcdv1beta2.BackupStorageTypeS3, etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS, etcdv1beta2.BackupStorageTypePVC,
}

// validLocation reports whether Decode must accept l: a known store, a bucket and a key, and a
// CA reference with both parts if any.
func validLocation(l Location) bool {
	known := false
	for _, typ := range storageTypes {
		known = known || l.Type == typ
	}
	return known && l.Bucket != "" && l.Key != "" && (l.CA == nil || (l.CA.Name != "" && l.CA.Key != ""))
}

// FuzzLocationRoundTrip: every valid Location survives Encode and Decode unchanged (the seed
// agent restores exactly the object the restore operator verified), and an invalid one is
// refused rather than passed on.
func FuzzLocationRoundTrip(f *testing.F) {
	for _, tc := range sources() {
		l := tc.want
		var caName, caKey string
		if l.CA != nil {
			caName, caKey = l.CA.Name, l.CA.Key
		}
		f.Add(string(l.Type), l.Bucket, l.Key, l.Endpoint, l.ForcePathStyle, l.Secret, l.CA != nil, caName, caKey)
	}
	f.Add("S3", "b", "", "", false, "", false, "", "")
	f.Add("Local", "b", "k", "", false, "", true, "ca", "")
	f.Add("s3", "b\u2028", "k\"}", "http://x/\x00", true, "<script>", false, "", "")
	f.Fuzz(func(t *testing.T, typ, bucket, key, endpoint string, forcePathStyle bool, secret string, hasCA bool, caName, caKey string) {
		for _, s := range []string{typ, bucket, key, endpoint, secret, caName, caKey} {
			if !utf8.ValidString(s) {
				t.Skip() // every field comes from a Kubernetes object: always UTF-8
			}
		}
		l := Location{Type: etcdv1beta2.BackupStorageType(typ), Bucket: bucket, Key: key, Endpoint: endpoint,
			ForcePathStyle: forcePathStyle, Secret: secret}
		if hasCA {
			l.CA = &etcdv1beta2.SecretKeySelector{Name: caName, Key: caKey}
		}
		back, err := Decode(l.Encode())
		switch {
		case validLocation(l) && (err != nil || !reflect.DeepEqual(back, l)):
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", l, back, err)
		case !validLocation(l) && err == nil:
			t.Fatalf("Decode(Encode(%+v)) accepted an invalid location: %+v", l, back)
		}
	})
}

// FuzzDecode: any annotation or flag value decodes without panicking to a valid Location or an
// error, and what decodes (including the previous release's pinned BackupSpec) is a fixed
// point: encoding it and decoding again gives the same Location.
func FuzzDecode(f *testing.F) {
	for _, tc := range sources() {
		f.Add(tc.want.Encode())
		raw, _ := json.Marshal(etcdv1beta2.BackupSpec{StorageType: tc.typ, BackupSource: tc.src})
		f.Add(string(raw))
	}
	for _, s := range []string{`{}`, `{"type":"S3","bucket":"b"}`, `{"type":"Local","bucket":"b","key":"k"}`, `not json`,
		`{"TYPE":"S3","Bucket":"b","KEY":"k"}`, `{"type":"","storageType":"GCS","gcs":{"path":"/b/"}}`,
		`{"storageType":"S3","s3":{"path":"b/k","endpointCA":{"name":"ca"}}}`, `{"type":"S3","bucket":"b","key":"k","ca":{"name":""}}`,
		`{"type":"S3","bucket":"b","key":"k","ca":null}`, `{"type":"ABS","bucket":"\ud800","key":"k"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Decode(s)
		if err != nil {
			if !reflect.DeepEqual(l, Location{}) {
				t.Fatalf("Decode(%q) failed (%v) but returned %+v", s, err, l)
			}
			return
		}
		if !validLocation(l) {
			t.Fatalf("Decode(%q) = %+v: not a valid location", s, l)
		}
		again, err := Decode(l.Encode())
		if err != nil || !reflect.DeepEqual(again, l) {
			t.Fatalf("Decode(%q) = %+v, which encodes to %s and decodes to %+v, %v", s, l, l.Encode(), again, err)
		}
	})
}
