// Command pvperm runs next to the local cluster's kube-controller-manager and opens up the
// directories its hostPath provisioner creates (root, mode 0750) to every user, the way real
// dynamic provisioners serve pods that do not run as root: rancher's local-path-provisioner
// creates 0777 directories, and CSI drivers apply the pod's fsGroup, which hostPath volumes
// ignore. Without it, member pods (non-root by default) could not write their PVCs on the local
// cluster. Local cluster only; it watches one directory with inotify and exits on SIGTERM.
//
// Usage: pvperm DIR
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pvperm DIR")
		os.Exit(2)
	}
	// run returns only when it fails; SIGTERM ends the process.
	fmt.Fprintln(os.Stderr, "pvperm:", run(os.Args[1]))
	os.Exit(1)
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	// Directories made before the watch started.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			open(filepath.Join(dir, e.Name()))
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; os.Exit(0) }()
	fmt.Printf("pvperm: watching %s\n", dir)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading inotify events: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off])) //nolint:gosec // the kernel's event layout
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_ISDIR == 0 {
				continue
			}
			open(filepath.Join(dir, string(trimNUL(name))))
		}
	}
}

// open makes a provisioned volume directory writable by every user (it holds one volume).
func open(path string) {
	if err := os.Chmod(path, 0o777); err != nil { //nolint:gosec // the point: any pod user writes its volume
		fmt.Fprintln(os.Stderr, "pvperm:", err)
		return
	}
	fmt.Printf("pvperm: %s is 0777\n", path)
}

func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
