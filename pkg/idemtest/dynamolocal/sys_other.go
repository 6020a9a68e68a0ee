//go:build !unix

package dynamolocal

import (
	"os"
	"syscall"
)

// sysProcAttr asks for nothing special: only Stop stops the engine here, and
// only the engine, not what it started.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(pid int) { kill(pid) }

func kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
