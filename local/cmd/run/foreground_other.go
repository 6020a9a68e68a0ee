//go:build !linux

package main

// foreground changes nothing here: Ctrl-C reaches make too, which then
// exits by the signal after this command's clean exit.
func foreground() (restore func()) { return func() {} }
