//go:build !linux

package proc

import (
	"errors"
	"syscall"
	"time"
)

// Attr puts a child in its own process group, so that killing the group
// reaches whatever it starts. Only Linux can also tie its life to this
// process's.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// Children is not implemented here: it reads Linux's /proc.
func Children(pid int) []int { return nil }

// CPU is not implemented here: it reads Linux's /proc.
func CPU(pid int) (time.Duration, error) { return 0, errors.ErrUnsupported }

// SelfCPU is not implemented here.
func SelfCPU() time.Duration { return 0 }

// Listener is not implemented here: it reads Linux's /proc.
func Listener(port int) (int, error) { return 0, errors.ErrUnsupported }
