package testutil

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address (127.0.0.1:port) with a port nobody listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
