package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// RestrictedViolations evaluates pod against Pod Security "restricted" (latest) with the checks
// the kube-apiserver's PodSecurity admission runs, and returns why it would be refused (none:
// admitted).
func RestrictedViolations(pod *corev1.Pod) ([]string, error) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range eval.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out, nil
}
