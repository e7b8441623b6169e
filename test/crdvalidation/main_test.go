// Package crdvalidation applies valid and invalid manifests to a real kube-apiserver (envtest)
// with the generated CRDs installed, and checks that the schema and CEL rules accept and reject
// them with the expected messages (etcd-druid test/it/crdvalidation); and that every field path
// the README and docs/ name is in the CRDs' schemas.
package crdvalidation

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

var env *testutil.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testutil.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
