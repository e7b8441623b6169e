package capture

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// SegmentsSuffix is appended to a backup prefix to name the directory that holds its segments:
// the segments of the backups under "dir/etcd.backup" are under "dir/etcd.backup.segments/".
const SegmentsSuffix = ".segments"

// SegmentExt ends every segment key. A key that ends in it never parses as a backup key
// (snapshot.SplitKey wants the key to end in a revision or a hex cluster ID), so retention and
// backup selection, which list the same prefix, ignore segments.
const SegmentExt = ".seg"

// revisionDigits and clusterIDDigits are the zero-padded widths of revisions and the hex cluster
// ID in keys, as in snapshot's backup keys.
const (
	revisionDigits  = 20
	clusterIDDigits = 16
)

// segmentNameLen is the length of <first>-<last>_<time>.seg.
const segmentNameLen = revisionDigits + 1 + revisionDigits + 1 + len(snapshot.KeyTimeFormat) + len(SegmentExt)

// SegmentInfo is what a segment key says about the segment.
type SegmentInfo struct {
	// Identity is the cluster the segment was captured from.
	snapshot.Identity
	// First and Last are the first and last revision the segment holds.
	First, Last int64
	// Time is when the capturer received the first revision (second precision, UTC).
	Time time.Time
}

// SegmentDir is the directory of the segments of cluster id under backup prefix prefix:
// <prefix>.segments/<namespace>_<cluster>_<cluster ID, 16 hex digits>/. Listing it lists that
// cluster's segments in first-revision order.
func SegmentDir(prefix string, id snapshot.Identity) string {
	return fmt.Sprintf("%s%s/%s_%s_%0*x/", prefix, SegmentsSuffix, id.Namespace, id.Cluster, clusterIDDigits, id.ClusterID)
}

// SegmentKey is the key of the segment of cluster id holding revisions first to last, whose
// first revision was received at t: SegmentDir(prefix, id) + <first, 20 digits>-<last, 20
// digits>_<UTC time, snapshot.KeyTimeFormat>.seg, for example
// etcd.backup.segments/prod_main_8e9e05c52164694d/00000000000000012346-00000000000000012399_20260101T020005Z.seg.
// The fixed widths make the keys of one cluster sort by first revision in string order. id
// must be Tagged, and 1 <= first <= last.
func SegmentKey(prefix string, id snapshot.Identity, first, last int64, t time.Time) string {
	return fmt.Sprintf("%s%0*d-%0*d_%s%s", SegmentDir(prefix, id), revisionDigits, first, revisionDigits, last,
		t.UTC().Format(snapshot.KeyTimeFormat), SegmentExt)
}

// ParseSegmentKey parses a key written by SegmentKey and returns its prefix. ok is false for
// anything else, including backup keys. It reads the key from its end, so the prefix may hold
// any character.
func ParseSegmentKey(key string) (prefix string, info SegmentInfo, ok bool) {
	dir, name, found := cutLast(key, '/')
	if !found || len(name) != segmentNameLen || !strings.HasSuffix(name, SegmentExt) {
		return "", SegmentInfo{}, false
	}
	head, idPart, found := cutLast(dir, '/')
	if !found || !strings.HasSuffix(head, SegmentsSuffix) || len(head) == len(SegmentsSuffix) {
		return "", SegmentInfo{}, false
	}
	id, found := parseIdentity(idPart)
	if !found {
		return "", SegmentInfo{}, false
	}
	first, rest := name[:revisionDigits], name[revisionDigits:]
	last, rest := rest[1:1+revisionDigits], rest[1+revisionDigits:]
	ts := rest[1 : 1+len(snapshot.KeyTimeFormat)]
	if name[revisionDigits] != '-' || rest[0] != '_' {
		return "", SegmentInfo{}, false
	}
	info = SegmentInfo{Identity: id}
	var err error
	if info.First, err = parseRevision(first); err != nil {
		return "", SegmentInfo{}, false
	}
	if info.Last, err = parseRevision(last); err != nil || info.First < 1 || info.Last < info.First {
		return "", SegmentInfo{}, false
	}
	if info.Time, err = time.Parse(snapshot.KeyTimeFormat, ts); err != nil {
		return "", SegmentInfo{}, false
	}
	return strings.TrimSuffix(head, SegmentsSuffix), info, true
}

// parseIdentity parses <namespace>_<cluster>_<16 hex digits>.
func parseIdentity(s string) (snapshot.Identity, bool) {
	rest, hex, ok := cutLast(s, '_')
	if !ok || len(hex) != clusterIDDigits || strings.Trim(hex, "0123456789abcdef") != "" {
		return snapshot.Identity{}, false
	}
	ns, cluster, ok := cutLast(rest, '_')
	if !ok || !snapshot.IsName(ns) || (cluster != snapshot.UnknownCluster && !snapshot.IsName(cluster)) {
		return snapshot.Identity{}, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return snapshot.Identity{}, false
	}
	return snapshot.Identity{Namespace: ns, Cluster: cluster, ClusterID: id}, true
}

// validIdentity reports whether id can be written into a key and a segment header.
func validIdentity(id snapshot.Identity) bool {
	return snapshot.IsName(id.Namespace) && (id.Cluster == snapshot.UnknownCluster || snapshot.IsName(id.Cluster))
}

func parseRevision(s string) (int64, error) {
	if strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("revision %q is not decimal digits", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// cutLast splits s at its last sep.
func cutLast(s string, sep byte) (string, string, bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}
