package member

import (
	"strconv"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// compactHashCheckSince is the first 3.5 release with the compact hash check.
const compactHashCheckSince = "3.5.5"

// corruptionFlags turn on etcd's corruption checks when spec.memberReplacement
// corruptionCheckSeconds is set: the leader's periodic comparison of every member's hash, and
// the comparison of the hashes recorded at each compaction. 3.6 renamed both; its old names
// still work but are deprecated, so a pod gets the names of the version it is made for (a 3.5
// pod upgraded in place keeps the old names, which 3.6 accepts). The initial check
// (InitialCorruptCheck) stays off: see docs/etcdcluster.md, Limits.
func corruptionFlags(c *etcdv1beta2.EtcdCluster, version string) []string {
	every, ok := c.CorruptionCheck()
	if !ok {
		return nil
	}
	period := strconv.FormatInt(int64(every.Seconds()), 10) + "s"
	switch {
	case cluster.CompareVersions(version, "3.6.0") >= 0:
		return []string{"--corrupt-check-time=" + period, "--feature-gates=CompactHashCheck=true"}
	case cluster.CompareVersions(version, compactHashCheckSince) >= 0:
		return []string{"--experimental-corrupt-check-time=" + period, "--experimental-compact-hash-check-enabled=true"}
	}
	return []string{"--experimental-corrupt-check-time=" + period}
}
