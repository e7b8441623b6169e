package benchutil

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MiB is 1 << 20 bytes.
const MiB = 1 << 20

// Int reads a positive number from the environment variable name, def when it is unset.
func Int(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// Sizes parses the comma-separated sizes (like 64MiB,1GiB) of the environment variable name,
// def when it is unset.
func Sizes(t testing.TB, name, def string) []int64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int64
	for _, s := range strings.Split(v, ",") {
		q, err := resource.ParseQuantity(strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b")))
		if err != nil || q.Value() < MiB {
			t.Fatalf("%s: size %q: want e.g. 64MiB or 1GiB", name, s)
		}
		out = append(out, q.Value())
	}
	return out
}

// SizeName is n as "64 MiB" or "1 GiB".
func SizeName(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// Median of xs; 0 for none.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
