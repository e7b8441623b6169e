//go:build e2e

package framework

import (
	"os"
	"strings"
	"testing"
)

// TierEnvVar picks the e2e tests a run takes (hack/e2e.sh passes it through):
//   - unset or "ci": every test but the long tier (make test, CI);
//   - "long": the long tier alone (make test-e2e-long);
//   - "all": every test.
const TierEnvVar = "E2E_TIER"

// longTier holds the e2e tests CI does not run, each with a cheaper test of the same code path
// that it does run. They are the suite's longest tests (CI rehearsal at 2c61555, seconds, on a
// loaded two-core machine) and run in `make test-e2e-long`, which is run before each stop.
// A name is a top-level test or a subtest ("TestX/sub").
var longTier = map[string]string{
	// 193 s. The seed's restore of the same keyspaces (leases, locks, elections, a compacted
	// history, auth) is internal/restoreseed's TestRestoreCorpus; TestAuth restores an
	// auth-enabled cluster through the operators.
	"TestRestoreCorpus": "a restore of every keyspace in internal/testutil/keyspace, into a new name and in place",
	// 183 s. The same restore path with leased keys runs in TestRestore and TestDeclarativeRecovery.
	"TestKubernetesEtcd": "a kube-apiserver's keyspace restored and served by a kube-apiserver again",
	// 159 s. The quorum-loss detection it starts from is TestQuorumLost's.
	"TestQuorumFromSurvivor": "spec.survivorRecovery: quorum rebuilt from one surviving member",
	// 115 s, not parallel (it restarts the shared etcd operator twice). The chaos smoke's
	// operator-killed-before-promote kills the operator between a learner's add and its promotion.
	"TestFailpointAfterMemberAdd": "the etcd operator exits right after MemberAddAsLearner, before the pod exists",
	// 98 s. The downgrade API path is TestDowngrade36To35AndBack/emptydir's; this one also
	// rebuilds each pod on its volume with 3.5's flags.
	"TestDowngrade36To35AndBack/volumes": "a downgrade of members on volumes",
	// 40 s. internal/controller/etcdcluster's TestVolumeExpansionUnsupported checks the same
	// condition, Warning and Stalled status against a StorageClass without expansion.
	"TestVolumeExpansionUnsupportedSaysSo": "a raised storage request on the host-path StorageClass, which cannot grow volumes",
	// 114 s, and cert-manager's controllers running (hack/cert-manager.sh; a cold build of
	// them is about 6 min of CPU). internal/controller/etcdcluster's TestIssuedTLS drives the
	// same Certificate objects, Secrets and members' certificates against envtest, with the
	// test in cert-manager's place.
	"TestCertManagerTLS": "certificates from cert-manager's own controllers, renewed under a writer",
	// 150 s beside the packages that compute: a 3-member cluster of 100k keys of its own,
	// backed up to each provider and each object restored with etcdutl on the host. TestRestore
	// backs up a 3-member cluster of 100k keys to each provider through the backup operator too,
	// checks each backup's location, and restores each object into a cluster whose every member
	// is verified.
	"TestBackup3MemberClusterToEveryProvider": "one-shot backups of a 100k-key cluster to every provider, restored on the host",
	// 180 s of writes for the three together (240 MiB into each provider's member). The S3 case
	// runs in make test; each provider's upload leaving nothing behind when its source fails is
	// pkg/backend/backendtest's FailedUpload, run against fake-gcs-server and Azurite.
	"TestBackupStreamCutOff/GCS": "a snapshot stream cut mid-upload to fake-gcs-server",
	"TestBackupStreamCutOff/ABS": "a snapshot stream cut mid-upload to Azurite",
	// 96 s, most of it building both platforms' images with a new version stamp (hack/releasetest's
	// TestOperatorImage builds and checks the same two-platform index in make test).
	"TestPushAndPull": "make push to a registry, and nodes pulling the operators from it",
}

// tier skips t when the run's tier (E2E_TIER) leaves it out. Global and CreateNamespace call
// it, so every test, and every subtest that makes a namespace, is sorted before it makes anything.
func tier(t testing.TB) {
	t.Helper()
	name, mode := t.Name(), os.Getenv(TierEnvVar)
	switch {
	case mode != "" && mode != "ci" && mode != "long" && mode != "all":
		t.Fatalf("%s=%q: want ci, long or all", TierEnvVar, mode)
	case Runs(name):
	case mode == "long":
		t.Skip("not in the long tier: E2E_TIER=long runs the long tier alone")
	default:
		_, why := isLong(name)
		t.Skipf("long tier (%s): runs in make test-e2e-long (E2E_TIER=long or all)", why)
	}
}

// Runs reports whether the run's tier (E2E_TIER) takes the test or subtest of that name. A test
// whose cases share one setup (members started together, one wait for all) asks it for each
// case's name before it makes anything for it, where the case's subtest would come too late.
func Runs(name string) bool {
	long, _ := isLong(name)
	switch os.Getenv(TierEnvVar) {
	case "long":
		return long || parentOfLong(name)
	case "all":
		return true
	default:
		return !long
	}
}

// isLong: name or one of its parents is in the long tier.
func isLong(name string) (bool, string) {
	for n := name; ; {
		if why, ok := longTier[n]; ok {
			return true, why
		}
		i := strings.LastIndex(n, "/")
		if i < 0 {
			return false, ""
		}
		n = n[:i]
	}
}

// parentOfLong: name has a subtest in the long tier (it runs, for that subtest's sake).
func parentOfLong(name string) bool {
	for n := range longTier {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}
