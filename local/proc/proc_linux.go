// Package proc starts the local stack's helper processes (the DynamoDB
// engine, the Runtime Interface Emulator) so that none outlives its parent,
// and finds them free ports and keeps their output.
package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Attr puts a child in its own process group, so that killing the group
// reaches whatever it starts, and asks the kernel to kill it if this process
// dies first.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Children returns the processes whose parent is pid. The Runtime Interface
// Emulator starts a function in a process group of its own, so killing the
// emulator's group does not reach the function: its caller needs this.
func Children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}
