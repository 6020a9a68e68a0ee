package main

import (
	"os/signal"
	"syscall"
	"unsafe"
)

// foreground puts this process in a process group of its own and makes it
// the terminal's foreground group, so that Ctrl-C sends SIGINT here alone
// and not to make (or a shell's pipeline) around it: make, which on SIGINT
// stops and kills itself by the same signal whatever its child did, then
// sees an ordinary exit 0. restore gives the terminal back to the group
// that had it. Without a terminal, or when this process is not in its
// foreground group, it changes nothing.
func foreground() (restore func()) {
	const tty = 0
	var was int32
	if ioctl(tty, syscall.TIOCGPGRP, &was) != nil || int(was) != syscall.Getpgrp() {
		return func() {}
	}
	// A background group that sets the terminal's group gets SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	if syscall.Setpgid(0, 0) != nil {
		return func() {}
	}
	me := int32(syscall.Getpid())
	if ioctl(tty, syscall.TIOCSPGRP, &me) != nil {
		syscall.Setpgid(0, int(was))
		return func() {}
	}
	return func() { ioctl(tty, syscall.TIOCSPGRP, &was) }
}

func ioctl(fd int, req uint, pgrp *int32) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(pgrp))); e != 0 {
		return e
	}
	return nil
}
