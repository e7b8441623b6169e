package cluster

import (
	"fmt"
	"slices"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// MinUpgradeFrom35 is the oldest 3.5 patch release that may move to 3.6: etcd asks 3.5
// clusters to run 3.5.26 or newer first (fixes for learner promotion and for removed members
// rejoining across the upgrade).
const MinUpgradeFrom35 = "3.5.26"

// Newest35 is the newest 3.5 release this operator is tested with, suggested as the step
// before 3.6.
const Newest35 = "3.5.35"

// ParseVersion parses an etcd version, MAJOR.MINOR.PATCH with an optional "v" prefix and an
// optional pre-release or build suffix ("3.6.16", "v3.5.35", "3.6.0-rc.1"). Anything else
// (a missing patch number, a non-numeric part, a leading zero) is an error that names the
// string; nothing is guessed.
func ParseVersion(v string) (*utilversion.Version, error) {
	pv, err := utilversion.ParseSemantic(v)
	if err != nil {
		return nil, fmt.Errorf("invalid etcd version %q (want MAJOR.MINOR.PATCH, e.g. 3.6.16): %w", v, err)
	}
	return pv, nil
}

func order(a, b *utilversion.Version) int {
	switch {
	case a.LessThan(b):
		return -1
	case a.GreaterThan(b):
		return 1
	}
	return 0
}

// CompareVersions orders two versions for picking the lowest of a set: -1, 0 or 1. Well-formed
// versions compare by semantic version (a pre-release before its release). A malformed version
// sorts before every well-formed one (two malformed ones by their text), so the lowest of a set
// is the malformed version and CheckUpgrade, which parses it, reports it to the caller instead
// of treating it as 0.0.0.
func CompareVersions(a, b string) int {
	pa, errA := ParseVersion(a)
	pb, errB := ParseVersion(b)
	switch {
	case errA != nil && errB != nil:
		return compareStrings(a, b)
	case errA != nil:
		return -1
	case errB != nil:
		return 1
	}
	return order(pa, pb)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CheckUpgrade reports whether members running from may move to to: the same minor release
// (any patch); 3.5 -> 3.6 from 3.5.26 or newer; or 3.6 -> 3.5 to 3.5.26 or newer, through
// etcd's downgrade API (see nextDowngrade). Everything else (skipped minors, 3.6 from an older
// 3.5 patch, a downgrade to one) is an error that says why and what to do, and so is a
// malformed version.
func CheckUpgrade(from, to string) error {
	if from == "" || from == to {
		return nil
	}
	f, err := ParseVersion(from)
	if err != nil {
		return fmt.Errorf("the members run an unrecognised version: %w", err)
	}
	t, err := ParseVersion(to)
	if err != nil {
		return fmt.Errorf("spec.version: %w", err)
	}
	fMaj, fMin, tMaj, tMin := f.Major(), f.Minor(), t.Major(), t.Minor()
	floor := utilversion.MustParseSemantic(MinUpgradeFrom35)
	switch {
	case fMaj == tMaj && fMin == tMin:
		return nil
	case fMaj == 3 && tMaj == 3 && fMin == 5 && tMin == 6:
		if f.LessThan(floor) {
			return fmt.Errorf("upgrading etcd from %s to %s is refused: etcd 3.5 must run %s or newer before it moves to 3.6; set spec.version to %s or newer (the newest 3.5 release, e.g. %s) first, then to %s", from, to, MinUpgradeFrom35, MinUpgradeFrom35, Newest35, to)
		}
		return nil
	case fMaj == 3 && tMaj == 3 && fMin == 6 && tMin == 5:
		// etcd's 3.6 -> 3.5 downgrade needs the 3.5 release that 3.6 is tested against, and
		// a member pod downgraded in place keeps the liveness probe of its 3.6 pod (/livez).
		if t.LessThan(floor) {
			return fmt.Errorf("downgrading etcd from %s to %s is refused: a 3.6 cluster downgrades to %s or newer only; set spec.version to %s or newer (e.g. %s)", from, to, MinUpgradeFrom35, MinUpgradeFrom35, Newest35)
		}
		return nil
	case fMaj > tMaj || (fMaj == tMaj && fMin > tMin):
		return fmt.Errorf("downgrading etcd from %s to %s is not supported: etcd downgrades one minor release at a time (3.6 -> 3.5); restore a backup into a new cluster instead", from, to)
	}
	return fmt.Errorf("upgrading etcd from %s to %s is not a supported path: upgrade one minor release at a time (3.5 -> 3.6)", from, to)
}

// IsDowngrade reports whether moving from to to lowers the minor release (3.6 -> 3.5): a step
// that goes through etcd's downgrade API. Malformed versions are not a downgrade.
func IsDowngrade(from, to string) bool {
	f, errF := ParseVersion(from)
	t, errT := ParseVersion(to)
	if errF != nil || errT != nil {
		return false
	}
	return f.Major() == t.Major() && f.Minor() > t.Minor()
}

// MinorOf is version's MAJOR.MINOR ("3.5.35" -> "3.5"), or "" for a malformed version.
func MinorOf(version string) string {
	v, err := ParseVersion(version)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// flagsNotIn35 are the etcd flags 3.6 knows and 3.5 refuses (etcd's 3.6 -> 3.5 downgrade guide:
// new in 3.6, or renamed from an --experimental- name). A 3.6 member pod that carries one
// cannot run 3.5 in place: it must be made again with 3.5's flags.
var flagsNotIn35 = []string{
	"--discovery-token", "--discovery-endpoints", "--discovery-dial-timeout", "--discovery-request-timeout",
	"--discovery-keepalive-time", "--discovery-keepalive-timeout", "--discovery-insecure-transport",
	"--discovery-insecure-skip-tls-verify", "--discovery-cert", "--discovery-key", "--discovery-cacert",
	"--discovery-user", "--discovery-password", "--feature-gates", "--log-format",
	"--bootstrap-defrag-threshold-megabytes", "--compaction-batch-limit", "--compact-hash-check-time",
	"--compaction-sleep-interval", "--corrupt-check-time", "--enable-distributed-tracing",
	"--distributed-tracing-address", "--distributed-tracing-instance-id", "--distributed-tracing-sampling-rate",
	"--distributed-tracing-service-name", "--downgrade-check-time", "--max-learners", "--memory-mlock",
	"--peer-skip-client-san-verification", "--snapshot-catchup-entries", "--warning-apply-duration",
	"--warning-unary-request-duration", "--watch-progress-notify-interval",
}

// FlagsUnknownTo lists the flags among flags (etcd command-line arguments, "--name=value" or
// "--name") that etcd version does not know: those 3.6 added, for a 3.5 version; none
// otherwise.
func FlagsUnknownTo(version string, flags []string) []string {
	if MinorOf(version) != "3.5" {
		return nil
	}
	var out []string
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		if slices.Contains(flagsNotIn35, name) {
			out = append(out, name)
		}
	}
	return out
}
