// Package benchutil holds what the benches share: reading a process's peak resident memory
// (VmHWM) on Linux, and their BENCH_* settings, sizes and medians.
package benchutil

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Self names the calling process for ResetPeak and PeakRSS.
const Self = "self"

// ResetPeak sets the VmHWM of process pid (a number, or Self) back to its current RSS (Linux
// 4.0+; another process's needs root or ptrace rights over it).
func ResetPeak(pid string) error {
	return os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
}

// PeakRSS returns VmHWM from /proc/<pid>/status in bytes, 0 if unavailable.
func PeakRSS(pid string) uint64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
