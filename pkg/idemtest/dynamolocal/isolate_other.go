//go:build !linux

package dynamolocal

import (
	"fmt"
	"io"
	"runtime"
)

// runIsolated: only Linux has network namespaces.
func (e *Engine) runIsolated(java, jar string, args []string, addr string, w io.Writer) error {
	return fmt.Errorf("%w (%s has no network namespaces)", errNoNamespace, runtime.GOOS)
}

// forwarder is only Linux's.
type forwarder struct{}

func (*forwarder) close() {}
