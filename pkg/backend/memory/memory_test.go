package memory_test

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
)

func TestAcceptance(t *testing.T) {
	backendtest.AcceptanceTest(t, memory.New())
}
