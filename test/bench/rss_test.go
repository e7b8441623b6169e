//go:build e2e && bench

package bench

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// operatorPeak returns the peak RSS (VmHWM, MiB) of an operator's process during do: the
// process is found on this host (the local cluster's only node), its peak reset before do.
func operatorPeak(t *testing.T, f *framework.Framework, name string, do func()) float64 {
	t.Helper()
	op := findOperator(t, f, name)
	op.resetPeak(t)
	do()
	peak, _ := op.peak(t, f)
	return peak
}
