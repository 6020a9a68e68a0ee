//go:build unix && !linux

package dynamolocal_test

import "testing"

const probeEnv = "DYNAMOLOCAL_PROBE"

func probe() int { return 1 }

// namespaces: only Linux has network namespaces.
func namespaces(t *testing.T) bool { return false }
