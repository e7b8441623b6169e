package opmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInfoVec: an info series follows its object's current values (an upgraded cluster stops
// reporting its old version) and goes when the object is forgotten; other objects keep theirs.
func TestInfoVec(t *testing.T) {
	v := NewInfoVec(prometheus.GaugeOpts{Name: "etcd_operator_test_info", Help: "test"}, []string{"cluster_namespace", "cluster", "version"})
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"first version", func() { v.Set("a/c", "a", "c", "3.5.17"); v.Set("a/d", "a", "d", "3.5.17") },
			`etcd_operator_test_info{cluster="c",cluster_namespace="a",version="3.5.17"} 1
etcd_operator_test_info{cluster="d",cluster_namespace="a",version="3.5.17"} 1`},
		{"upgraded", func() { v.Set("a/c", "a", "c", "3.6.5") },
			`etcd_operator_test_info{cluster="c",cluster_namespace="a",version="3.6.5"} 1
etcd_operator_test_info{cluster="d",cluster_namespace="a",version="3.5.17"} 1`},
		{"deleted", func() { v.Forget(func(k string) bool { return k == "a/c" }) },
			`etcd_operator_test_info{cluster="d",cluster_namespace="a",version="3.5.17"} 1`},
	}
	for _, s := range steps {
		s.do()
		want := "# HELP etcd_operator_test_info test\n# TYPE etcd_operator_test_info gauge\n" + s.want + "\n"
		if err := testutil.CollectAndCompare(v, strings.NewReader(want)); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestBuildInfo: etcd_operator_build_info carries the binary and is 1; registering it twice (a
// second manager in one process) is not an error.
func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := Register(reg, NewBuildInfo("backup-operator")); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "etcd_operator_build_info" || len(fams[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", fams)
	}
	m := fams[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if m.GetGauge().GetValue() != 1 || labels["binary"] != "backup-operator" || labels["version"] == "" || !strings.HasPrefix(labels["goversion"], "go") {
		t.Fatalf("build info %v = %v", labels, m.GetGauge().GetValue())
	}
}
