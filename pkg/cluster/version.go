package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// CheckUpgrade reports whether members running from may move to to: the same minor release
// (any patch), or 3.5 -> 3.6. Everything else (downgrades across minors, skipped minors) is an
// error that says why.
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
