package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// FreePort returns a loopback TCP port free now, for a child to listen on.
// It is drawn below Linux's ephemeral range (32768 to 60999), from which
// the kernel picks the local port of every outgoing connection: a port
// handed out of that range can be taken by some client's connect before
// the child binds it (the Lambda emulator binds its Runtime API only at
// the first invoke), and on a loaded machine it was.
func FreePort() (int, error) {
	for range 50 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: draw again
		}
		_ = l.Close() // only its port was wanted
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}
