package main

import "testing"

// TestNbioUnsentField: the engine reads nbio's unsent bytes from an
// unexported field of its connection (nbio v1.6.8 is pinned); if nbio
// moves it, this fails rather than the bound on waiting output silently
// doing nothing.
func TestNbioUnsentField(t *testing.T) {
	if nbioLeft == nil {
		t.Fatal("nbio.Conn has no int field left: the engine cannot tell how much output waits")
	}
}
