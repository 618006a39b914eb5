package experiment

import (
	"os"
	"os/exec"
	"testing"
)

// A generator that finished between the liveness check and the reading of
// its threads has no thread left to run anywhere: that is not a pinning
// failure (it failed CI once when the prober ended as it was checked).
func TestCheckPinnedExited(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$") // this test binary, running nothing
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := checkPinned(cmd.Process.Pid, "0"); err != nil {
		t.Errorf("an exited process: %v", err)
	}
}
