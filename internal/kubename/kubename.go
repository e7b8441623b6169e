// Package kubename makes the deterministic names of objects the operators create fit the
// Kubernetes limits of where they end up (a Service name, a label value: DNS-1035 labels of at
// most 63 characters).
package kubename

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

var notDNS1035 = regexp.MustCompile(`[^a-z0-9-]+`)

// hashLen is the number of hex digits of the hash that keeps shortened names apart.
const hashLen = 5

// Fit returns base+suffix when base is a DNS-1035 label and base+suffix has at most maxLen
// characters. Otherwise base is lower-cased, every run of other characters than [a-z0-9-]
// becomes '-', it gets a leading 's' if it does not start with a letter, it is cut so that
// <base>-<hash>+suffix fits in maxLen, and the first 5 hex digits of the SHA-256 of the original
// base are added: the result is deterministic, and two bases that shorten alike stay apart.
// suffix must be made of [a-z0-9-] and leave room for at least the hash.
func Fit(base, suffix string, maxLen int) string {
	fitted := strings.Trim(notDNS1035.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if fitted == "" || fitted[0] < 'a' || fitted[0] > 'z' {
		fitted = "s" + fitted
	}
	if fitted == base && len(base)+len(suffix) <= maxLen {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	h := hex.EncodeToString(sum[:])[:hashLen]
	keep := max(0, min(len(fitted), maxLen-len(suffix)-hashLen-1))
	return strings.TrimRight(fitted[:keep], "-") + "-" + h + suffix
}
