package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// MinUpgradeFrom35 is the oldest 3.5 patch release that may move to 3.6: etcd asks 3.5
// clusters to run 3.5.26 or newer first (fixes for learner promotion and for removed members
// rejoining across the upgrade).
const MinUpgradeFrom35 = "3.5.26"

// Newest35 is the newest 3.5 release this operator is tested with, suggested as the step
// before 3.6.
const Newest35 = "3.5.35"

// CheckUpgrade reports whether members running from may move to to: the same minor release
// (any patch), or 3.5 -> 3.6 from 3.5.26 or newer. Everything else (downgrades across minors,
// skipped minors, 3.6 from an older 3.5 patch) is an error that says why and what to do.
func CheckUpgrade(from, to string) error {
	if from == "" || from == to {
		return nil
	}
	fMaj, fMin, err := minor(from)
	if err != nil {
		return err
	}
	tMaj, tMin, err := minor(to)
	if err != nil {
		return err
	}
	switch {
	case fMaj == tMaj && fMin == tMin:
		return nil
	case fMaj == tMaj && tMin == fMin+1 && fMaj == 3 && fMin == 5:
		if CompareVersions(from, MinUpgradeFrom35) < 0 {
			return fmt.Errorf("upgrading etcd from %s to %s is refused: etcd 3.5 must run %s or newer before it moves to 3.6; set spec.version to %s or newer (the newest 3.5 release, e.g. %s) first, then to %s", from, to, MinUpgradeFrom35, MinUpgradeFrom35, Newest35, to)
		}
		return nil
	case fMaj > tMaj || (fMaj == tMaj && fMin > tMin):
		return fmt.Errorf("downgrading etcd from %s to %s is not supported: restore a backup into a new cluster instead", from, to)
	}
	return fmt.Errorf("upgrading etcd from %s to %s is not a supported path: upgrade one minor release at a time (3.5 -> 3.6)", from, to)
}

// CompareVersions compares two MAJOR.MINOR.PATCH versions: -1, 0 or 1.
func CompareVersions(a, b string) int {
	pa, pb := parts(a), parts(b)
	for i := 0; i < 3; i++ {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func parts(v string) [3]int {
	var out [3]int
	for i, s := range strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3) {
		out[i], _ = strconv.Atoi(s)
	}
	return out
}

func minor(v string) (int, int, error) {
	s := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(s) < 2 {
		return 0, 0, fmt.Errorf("invalid etcd version %q", v)
	}
	maj, err1 := strconv.Atoi(s[0])
	min, err2 := strconv.Atoi(s[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("invalid etcd version %q", v)
	}
	return maj, min, nil
}
