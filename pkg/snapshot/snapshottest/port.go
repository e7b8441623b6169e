package snapshottest

import (
	"testing"

	"golang.org/x/sys/unix"
)

// ReservePort returns a loopback TCP port that stays reserved for this test until it ends, and
// that an etcd started with --socket-reuse-port (as Start does) can listen on.
//
// A port picked by listening on :0 and closing again is free only for a moment: another test
// process may take it before etcd binds it, and a member whose peer URL is already in the
// cluster cannot move to another port. So the port is held by a socket that is bound with
// SO_REUSEPORT but never listens: nobody else can bind the port (a plain bind, or a :0 pick,
// fails with "address already in use"), only a SO_REUSEPORT listener of the same user can,
// and a socket that does not listen takes no connections from it.
func ReservePort(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("reserving a port: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		t.Fatalf("reserving a port: SO_REUSEPORT: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("reserving a port: bind: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("reserving a port: %v", err)
	}
	return sa.(*unix.SockaddrInet4).Port
}
