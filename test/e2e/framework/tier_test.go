//go:build e2e

package framework

import "testing"

// TestRunsFollowsTheTier: each E2E_TIER takes the tests and cases its comment promises, for a
// long top-level test, a long case of a test CI runs, and that test's other cases.
func TestRunsFollowsTheTier(t *testing.T) {
	const longTest, longCase, parent, ciCase = "TestKubernetesEtcd", "TestBackupStreamCutOff/GCS", "TestBackupStreamCutOff", "TestBackupStreamCutOff/S3"
	for _, name := range []string{longTest, longCase} {
		if _, ok := longTier[name]; !ok {
			t.Fatalf("%s is no longer in the long tier: pick another name for this test", name)
		}
	}
	for _, tc := range []struct {
		tier string
		want map[string]bool
	}{
		{"", map[string]bool{longTest: false, longTest + "/sub": false, longCase: false, parent: true, ciCase: true, "TestOther": true}},
		{"ci", map[string]bool{longTest: false, longCase: false, parent: true, ciCase: true}},
		{"long", map[string]bool{longTest: true, longTest + "/sub": true, longCase: true, parent: true, ciCase: false, "TestOther": false}},
		{"all", map[string]bool{longTest: true, longCase: true, parent: true, ciCase: true, "TestOther": true}},
	} {
		t.Setenv(TierEnvVar, tc.tier)
		for name, want := range tc.want {
			if got := Runs(name); got != want {
				t.Errorf("E2E_TIER=%q: Runs(%q) = %t, want %t", tc.tier, name, got, want)
			}
		}
	}
}
