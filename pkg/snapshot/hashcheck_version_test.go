package snapshot

import "testing"

func TestHashKVComparable(t *testing.T) {
	for v, want := range map[string]bool{
		"3.6.16":      true,
		"3.5.16":      true,
		"3.5.35":      true,
		"3.5.16-rc.0": true,
		"4.0.0":       true,
		"3.5.15":      false,
		"3.4.37":      false,
		"2.3.8":       false,
		"3.6":         false,
		"":            false,
		"x.y.z":       false,
	} {
		if got := hashKVComparable(v); got != want {
			t.Errorf("hashKVComparable(%q) = %t, want %t", v, got, want)
		}
	}
}
