package etcdcluster

import (
	"fmt"
	"os"
)

// Failpoints stop the operator between the two halves of a membership change, so that tests
// can show that the next pass finds and finishes (or undoes) the half-done step.
const (
	// FailpointEnv names the environment variable that arms one failpoint by name.
	FailpointEnv = "ETCD_OPERATOR_FAILPOINT"
	// FailpointAfterMemberAdd fires after MemberAddAsLearner, before the member's pod exists.
	FailpointAfterMemberAdd = "after-member-add"
	// FailpointAfterMemberRemove fires after MemberRemove, before the member's pod is deleted.
	FailpointAfterMemberRemove = "after-member-remove"
	// FailpointAfterPromote fires after MemberPromote, before the promotion is recorded (event,
	// metric, status).
	FailpointAfterPromote = "after-promote"
)

// envFailpoint returns the failpoint function of the process: if ETCD_OPERATOR_FAILPOINT
// names a failpoint, reaching it exits the process at once (like a crash or a kill -9; the
// one place besides main that exits, on purpose). Otherwise it does nothing.
func envFailpoint() func(string) {
	armed := os.Getenv(FailpointEnv)
	return func(name string) {
		if armed != "" && name == armed {
			fmt.Fprintf(os.Stderr, "failpoint %s reached: exiting\n", name)
			os.Exit(3)
		}
	}
}
