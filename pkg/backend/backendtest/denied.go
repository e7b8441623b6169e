package backendtest

import (
	"bytes"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// PermissionDenied checks that every call of b, a backend whose credentials the store refuses,
// fails with an error for which backend.IsPermissionDenied is true.
func PermissionDenied(t *testing.T, b backend.Backend) {
	t.Helper()
	ctx := t.Context()
	check := func(op string, err error) {
		t.Helper()
		if !backend.IsPermissionDenied(err) {
			t.Errorf("%s with refused credentials: %v, want an error marked backend.ErrPermissionDenied", op, err)
		}
	}
	check("Put", b.Put(ctx, "k", bytes.NewReader([]byte("data"))))
	_, err := b.Get(ctx, "k")
	check("Get", err)
	_, err = b.Stat(ctx, "k")
	check("Stat", err)
	_, err = b.List(ctx, "")
	check("List", err)
	check("Delete", b.Delete(ctx, "k"))
}
