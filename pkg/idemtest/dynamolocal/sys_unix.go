//go:build unix && !linux

package dynamolocal

import "syscall"

// sysProcAttr puts the engine in its own process group, so that stopping
// the group reaches whatever the JVM starts. Only Linux can also tie the
// engine's life to its parent's: here, only Stop stops it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func terminate(pid int) { syscall.Kill(-pid, syscall.SIGTERM) }
func kill(pid int)      { syscall.Kill(-pid, syscall.SIGKILL) }
