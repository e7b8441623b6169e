//go:build bench

package snapshot

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"
)

// A values generator fills val (its length is the value's size) with the next value of the
// writer whose source rng is.
type values func(rng *rand.ChaCha8, val []byte)

// Data sets of the fill: randomData for the plain rows (nothing on the way can compress it),
// BENCH_ENCODING_DATA (jsonData by default) for the encoding rows.
const (
	randomData = "random"
	jsonData   = "json"
)

// dataSets are the values generators by name.
var dataSets = map[string]values{
	randomData: func(rng *rand.ChaCha8, val []byte) { _, _ = rng.Read(val) },
	jsonData:   podListValue,
}

// dataDescriptions say in the results file what each data set is.
var dataDescriptions = map[string]string{
	randomData: "values of 1 MiB of random bytes (incompressible: the worst case for zstd)",
	jsonData: "values of 1 MiB of Kubernetes-like JSON (Pods as the apiserver stores them: repeated keys, " +
		"labels, images and structure; random names, uids, IPs, image digests, timestamps and a token per Pod), " +
		"which zstd shrinks 4-5x, as it does real keyspaces of mostly JSON/protobuf objects",
}

// encodingData is the data set of the encoding rows: BENCH_ENCODING_DATA, json by default.
func encodingData(t *testing.T) string {
	name := os.Getenv("BENCH_ENCODING_DATA")
	if name == "" {
		return jsonData
	}
	if dataSets[name] == nil {
		t.Fatalf("BENCH_ENCODING_DATA=%q: want %s or %s", name, jsonData, randomData)
	}
	return name
}

// Vocabularies of the Pods of podListValue: what real clusters repeat.
var (
	podNamespaces = []string{"default", "kube-system", "monitoring", "payments", "checkout", "search", "ingress-nginx", "cert-manager", "logging", "data"}
	podApps       = []string{"api", "web", "worker", "frontend", "cart", "catalog", "redis", "postgres", "prometheus", "fluent-bit", "nginx", "scheduler"}
	podImages     = []string{"registry.k8s.io/pause:3.10", "docker.io/library/nginx:1.27.3", "ghcr.io/example/api:v2.14.1", "quay.io/prometheus/prometheus:v3.1.0", "docker.io/library/redis:7.4.2", "docker.io/library/postgres:17.2"}
	podEpoch      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// podTokenBytes is the random token each Pod carries (a service token, a certificate: what
// does not compress); its length sets how compressible the data is, about 4.4x with 640 (zstd at its default level on the values alone).
const podTokenBytes = 640

// podListValue fills val with JSON Pods one after another, cut at len(val).
func podListValue(rng *rand.ChaCha8, val []byte) {
	r := rand.New(rng)
	b := val[:0]
	for len(b) < len(val) {
		b = appendPod(b, r)
	}
	copy(val, b) // b outgrew val: val holds its start
}

// appendPod appends one Pod of about 3 KiB in the apiserver's JSON (with managedFields and
// the last-applied annotation kubectl adds).
func appendPod(b []byte, r *rand.Rand) []byte {
	ns := podNamespaces[r.IntN(len(podNamespaces))]
	app := podApps[r.IntN(len(podApps))]
	image := podImages[r.IntN(len(podImages))]
	hash, suffix := randHex(r, 5), randAlnum(r, 5)
	name := app + "-" + hash + "-" + suffix
	created := podEpoch.Add(time.Duration(r.Int64N(int64(90 * 24 * time.Hour)))).Truncate(time.Second)
	started := created.Add(time.Duration(1+r.IntN(40)) * time.Second)
	ts, st := created.Format(time.RFC3339), started.Format(time.RFC3339)
	node := fmt.Sprintf("ip-10-%d-%d-%d.eu-west-1.compute.internal", r.IntN(4), r.IntN(256), r.IntN(256))
	podIP := netip.AddrFrom4([4]byte{10, byte(100 + r.IntN(8)), byte(r.IntN(256)), byte(r.IntN(256))}).String()
	hostIP := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))}).String()
	token := make([]byte, podTokenBytes)
	for i := range token {
		token[i] = byte(r.Uint32())
	}
	return fmt.Appendf(b, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"generateName":"%s-%s-","namespace":%q,`+
		`"uid":%q,"resourceVersion":"%d","creationTimestamp":%q,`+
		`"labels":{"app.kubernetes.io/name":%q,"app.kubernetes.io/part-of":%q,"pod-template-hash":%q},`+
		`"annotations":{"kubectl.kubernetes.io/restartedAt":%q,"checksum/config":%q},`+
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"%s-%s","uid":%q,"controller":true,"blockOwnerDeletion":true}],`+
		`"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":%q,"fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},`+
		`"f:spec":{"f:containers":{"k:{\"name\":\"%s\"}":{".":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},`+
		`"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},`+
		`{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":%q,"fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}},"subresource":"status"}]},`+
		`"spec":{"volumes":[{"name":"kube-api-access-%s","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],`+
		`"containers":[{"name":%q,"image":%q,"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],`+
		`"env":[{"name":"POD_NAMESPACE","value":%q},{"name":"SESSION_TOKEN","value":%q}],`+
		`"resources":{"limits":{"memory":"512Mi"},"requests":{"cpu":"100m","memory":"256Mi"}},`+
		`"volumeMounts":[{"name":"kube-api-access-%s","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],`+
		`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],`+
		`"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",`+
		`"nodeName":%q,"securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},`+
		`"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":%q},`+
		`{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":%q},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":%q},`+
		`{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":%q}],"hostIP":%q,"podIP":%q,"podIPs":[{"ip":%q}],"startTime":%q,`+
		`"containerStatuses":[{"name":%q,"state":{"running":{"startedAt":%q}},"lastState":{},"ready":true,"restartCount":%d,"image":%q,`+
		`"imageID":"%s@sha256:%s","containerID":"containerd://%s","started":true}],"qosClass":"Burstable"}}`+"\n",
		name, app, hash, ns,
		randUUID(r), 1000000+r.IntN(90000000), ts,
		app, ns, hash,
		ts, randHex(r, 64),
		app, hash, randUUID(r),
		ts, randUUID(r),
		app,
		st,
		suffix,
		app, image,
		ns, base64.StdEncoding.EncodeToString(token),
		suffix,
		node, ts,
		st, st, ts, hostIP, podIP, podIP, ts,
		app, st, r.IntN(3), image,
		image, randHex(r, 64), randHex(r, 64))
}

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)[:n]
}

func randAlnum(r *rand.Rand, n int) string {
	const alnum = "bcdfghjklmnpqrstvwxz2456789" // the apiserver's generateName alphabet
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

func randUUID(r *rand.Rand) string {
	h := randHex(r, 32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
