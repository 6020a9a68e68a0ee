//go:build !unix

package idemtest

import (
	"os"
	"syscall"
)

// sysProcAttr asks for nothing special: only Main stops the engine here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(pid int) { kill(pid) }

func kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
