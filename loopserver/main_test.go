package main

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestPortInUse: a taken port is one clear line on stderr and exit status 1.
func TestPortInUse(t *testing.T) {
	for _, eng := range engines {
		wiretest.CheckPortInUse(t, wiretest.Build(t, "."), "--engine", eng)
	}
}

// TestSignalStops: SIGINT and SIGTERM stop the server within 1 s, even with a
// loop held by a 5 s block and connections open.
func TestSignalStops(t *testing.T) {
	for _, eng := range engines {
		wiretest.CheckSignalStops(t, wiretest.Build(t, "."), "--engine", eng)
	}
}
