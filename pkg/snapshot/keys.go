package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KeyTimeFormat is the UTC timestamp in backup object keys: fixed width, so keys under one
// prefix sort by time.
const KeyTimeFormat = "20060102T150405Z"

// revisionDigits is the zero-padded width of the revision in keys: enough for any int64.
const revisionDigits = 20

// clusterIDDigits is the zero-padded width of the hex cluster ID in keys.
const clusterIDDigits = 16

// UnknownCluster is the cluster name in the key of a backup taken from etcdEndpoints that no
// EtcdCluster of the backup's namespace reports as its cluster ID.
const UnknownCluster = "-"

// Identity is the cluster a backup was taken from. The zero Identity is that of a legacy key,
// written before keys carried one.
type Identity struct {
	// Namespace is the namespace of the EtcdBackup that wrote the key.
	Namespace string
	// Cluster is the EtcdCluster's name, or UnknownCluster.
	Cluster string
	// ClusterID is the etcd cluster ID the member reported.
	ClusterID uint64
}

// Tagged reports whether the identity is known (the key is not a legacy one).
func (id Identity) Tagged() bool { return id.Namespace != "" }

// Same reports whether a and b name the same cluster: the same namespace and, when both cluster
// names are known, the same name (a restored or re-created cluster keeps its name but gets a
// new ID); when either name is unknown, the same cluster ID. Untagged identities are never the
// same as anything.
func (id Identity) Same(b Identity) bool {
	if !id.Tagged() || !b.Tagged() || id.Namespace != b.Namespace {
		return false
	}
	if id.Cluster != UnknownCluster && b.Cluster != UnknownCluster {
		return id.Cluster == b.Cluster
	}
	return id.ClusterID == b.ClusterID
}

// Describe renders the identity for messages: <namespace>/<cluster> (cluster ID <hex>). (Not
// String: KeyInfo embeds Identity, and fmt would print every KeyInfo as its identity alone.)
func (id Identity) Describe() string {
	if !id.Tagged() {
		return "legacy (no cluster identity)"
	}
	return fmt.Sprintf("%s/%s (cluster ID %0*x)", id.Namespace, id.Cluster, clusterIDDigits, id.ClusterID)
}

// ClusterKey returns the key of a periodic or scheduled backup of cluster id taken at t at
// revision rev: <prefix>_<UTC timestamp>_v<revision, 20 digits>_<namespace>_<cluster>_<cluster
// ID, 16 hex digits>, for example
// etcd.backup_20260101T020000Z_v00000000000000012345_prod_main_8e9e05c52164694d. Kubernetes
// names never contain "_", so the fields are unambiguous, and two clusters never write the same
// key. Keys under one prefix sort by time in string order; retention parses them with ParseKey
// instead of relying on string order. id must be Tagged, with a cluster name or UnknownCluster.
func ClusterKey(prefix string, id Identity, rev int64, t time.Time) string {
	return ClusterKeyIn(prefix, id, "", rev, t)
}

// ClusterKeyIn is ClusterKey for a cluster of the Kubernetes cluster kube (a KubeID; "" unknown,
// which is ClusterKey): the key ends in _k<kube>, for example
// etcd.backup_20260101T020000Z_v00000000000000012345_prod_main_8e9e05c52164694d_k3f2a9c1e0b7d4a65.
// Two Kubernetes clusters may run a cluster of the same namespace and name backing up under
// one prefix; the suffix lets retention and the choice of the newest backup tell theirs apart
// (issue 30 item 5). kube must be "" or IsKubeID.
func ClusterKeyIn(prefix string, id Identity, kube string, rev int64, t time.Time) string {
	key := fmt.Sprintf("%s_%s_%s_%0*x", ObjectKey(prefix, rev, t), id.Namespace, id.Cluster, clusterIDDigits, id.ClusterID)
	if kube != "" {
		key += "_k" + kube
	}
	return key
}

// KubeIDDigits is the length of a KubeID: lowercase hex digits.
const KubeIDDigits = 16

// IsKubeID reports whether s is a Kubernetes cluster identity as backup keys carry it:
// KubeIDDigits lowercase hex digits (internal/kubeid derives it from the kube-system
// namespace's UID).
func IsKubeID(s string) bool {
	return len(s) == KubeIDDigits && strings.Trim(s, "0123456789abcdef") == ""
}

// ObjectKey returns a legacy key, without the cluster's identity:
// <prefix>_<UTC timestamp>_v<revision padded to 20 digits>, for example
// etcd.backup_20260101T020000Z_v00000000000000012345. Backups no longer write it (see
// ClusterKey); ParseKey still reads it.
func ObjectKey(prefix string, rev int64, t time.Time) string {
	return fmt.Sprintf("%s_%s_v%0*d", prefix, t.UTC().Format(KeyTimeFormat), revisionDigits, rev)
}

// CoreosTimeFormat is the timestamp in the keys of coreos/etcd-operator's periodic backups (the
// operator's local time, UTC in its container).
const CoreosTimeFormat = "2006-01-02-15:04:05"

// CoreosKey returns the key coreos/etcd-operator (v0.9.x, pkg/backup) wrote for a periodic
// backup at revision rev taken at t: <prefix>_v<revision>_<time in CoreosTimeFormat>, for
// example etcd.backup_v12345_2019-05-01-02:00:00. SplitKey reads such keys as legacy keys (no
// cluster identity) with KeyInfo.Coreos set, so that retention and the choice of the newest
// backup count a coreos cluster's periodic backups, under the prefix its EtcdBackup still
// names, as that cluster's (the rule for legacy keys: while no other cluster's backup shares
// the prefix). This project never writes it.
func CoreosKey(prefix string, rev int64, t time.Time) string {
	return fmt.Sprintf("%s_v%d_%s", prefix, rev, t.UTC().Format(CoreosTimeFormat))
}

// KeyInfo is what a backup object key says about the backup.
type KeyInfo struct {
	// Time is when the backup was taken (second precision, UTC).
	Time time.Time
	// Revision is the etcd store revision the member reported before the snapshot.
	Revision int64
	// Identity is the cluster the backup was taken from; zero for a legacy key.
	Identity
	// Coreos is true for a key coreos/etcd-operator's periodic backup wrote (CoreosKey): a
	// legacy key, without identity.
	Coreos bool
	// Kube is the Kubernetes cluster the backup operator that wrote the key ran in (a KubeID,
	// see ClusterKeyIn); "" for keys written without one (before keys carried it, or by an
	// operator that could not read it).
	Kube string
}

// ParseKey parses a key written by ClusterKey or ObjectKey under prefix. ok is false for any key
// this project did not write that way under exactly this prefix (other prefixes that share the
// beginning, one-shot backups, foreign objects), which retention then leaves alone.
func ParseKey(prefix, key string) (KeyInfo, bool) {
	p, info, ok := SplitKey(key)
	if !ok || p != prefix {
		return KeyInfo{}, false
	}
	return info, true
}

// SplitKey parses a key written by ClusterKey, ObjectKey or coreos/etcd-operator (CoreosKey)
// under any prefix and returns that prefix. It reads the key from its end: the fields it
// appends have fixed shapes.
func SplitKey(key string) (string, KeyInfo, bool) {
	if prefix, info, ok := splitCoreosKey(key); ok {
		return prefix, info, true
	}
	var info KeyInfo
	rest := key
	if head, kube, ok := cutLast(key); ok && len(kube) == 1+KubeIDDigits && kube[0] == 'k' && IsKubeID(kube[1:]) {
		// A Kubernetes cluster identity comes only after a cluster identity.
		if rest, info.Identity, ok = cutIdentity(head); !ok {
			return "", KeyInfo{}, false
		}
		info.Kube = kube[1:]
	} else if head, id, ok := cutIdentity(key); ok {
		rest, info.Identity = head, id
	}
	// rest is <prefix>_<timestamp>_v<revision>.
	const tail = 1 + len(KeyTimeFormat) + 2 + revisionDigits
	if len(rest) <= tail {
		return "", KeyInfo{}, false
	}
	prefix, suffix := rest[:len(rest)-tail], rest[len(rest)-tail:]
	ts, rev := suffix[1:1+len(KeyTimeFormat)], suffix[1+len(KeyTimeFormat)+2:]
	if suffix[0] != '_' || suffix[1+len(KeyTimeFormat):1+len(KeyTimeFormat)+2] != "_v" || !isDigits(rev) {
		return "", KeyInfo{}, false
	}
	t, err := time.Parse(KeyTimeFormat, ts)
	if err != nil {
		return "", KeyInfo{}, false
	}
	r, err := strconv.ParseInt(rev, 10, 64)
	if err != nil {
		return "", KeyInfo{}, false
	}
	info.Time, info.Revision = t, r
	return prefix, info, true
}

// splitCoreosKey parses a key CoreosKey writes: exactly that spelling (no leading zeros in the
// revision), so that one backup has one key.
func splitCoreosKey(key string) (string, KeyInfo, bool) {
	rest, ts, ok := cutLast(key)
	if !ok || len(ts) != len(CoreosTimeFormat) {
		return "", KeyInfo{}, false
	}
	t, err := time.Parse(CoreosTimeFormat, ts)
	if err != nil {
		return "", KeyInfo{}, false
	}
	prefix, v, ok := cutLast(rest)
	rev, isRev := strings.CutPrefix(v, "v")
	if !ok || prefix == "" || !isRev || !isDigits(rev) {
		return "", KeyInfo{}, false
	}
	r, err := strconv.ParseInt(rev, 10, 64)
	if err != nil || strconv.FormatInt(r, 10) != rev || CoreosKey(prefix, r, t) != key {
		return "", KeyInfo{}, false
	}
	return prefix, KeyInfo{Time: t, Revision: r, Coreos: true}, true
}

// cutIdentity splits _<namespace>_<cluster>_<16 hex digits> off the end of key.
func cutIdentity(key string) (string, Identity, bool) {
	rest, hex, ok := cutLast(key)
	if !ok || len(hex) != clusterIDDigits || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", Identity{}, false
	}
	rest, cluster, ok := cutLast(rest)
	if !ok || (cluster != UnknownCluster && !IsName(cluster)) {
		return "", Identity{}, false
	}
	rest, ns, ok := cutLast(rest)
	if !ok || !IsName(ns) {
		return "", Identity{}, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return "", Identity{}, false
	}
	return rest, Identity{Namespace: ns, Cluster: cluster, ClusterID: id}, true
}

// cutLast splits s at its last "_".
func cutLast(s string) (string, string, bool) {
	i := strings.LastIndexByte(s, '_')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// IsName reports whether s can be a Kubernetes object name (a DNS-1123 subdomain): lowercase
// alphanumerics, "-" and ".", starting and ending with an alphanumeric, at most 253 bytes. The
// identity fields of backup keys and of pkg/capture's segment keys are checked with it.
func IsName(s string) bool {
	if s == "" || len(s) > 253 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
