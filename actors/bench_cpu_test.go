package actors_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process and its
// children have used so far: those it waited for (getrusage) and those
// still running (the overlay holder, read from /proc), Linux's figures;
// elsewhere what getrusage says.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	total := time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		raw, _ := os.ReadFile(t)
		for _, pid := range strings.Fields(string(raw)) {
			total += liveCPU(pid)
		}
	}
	return total
}

// liveCPU is the CPU time of the running process pid and of the
// children it waited for (/proc/<pid>/stat, in clock ticks of 10 ms).
func liveCPU(pid string) time.Duration {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields from 3 (state) on
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime: fields 14–17
		if i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
