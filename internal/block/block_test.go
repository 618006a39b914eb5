package block

import (
	"testing"
	"time"
)

// Each mode holds the caller at least the duration asked and reports what
// it really took.
func TestFor(t *testing.T) {
	for _, m := range []Mode{Sleep, Syscall, Spin} {
		start := time.Now()
		got := For(m, 20*time.Millisecond)
		took := time.Since(start)
		if got < 20*time.Millisecond || got > took {
			t.Errorf("%v: reported %s, took %s", m, got, took)
		}
		// A zero block waits for nothing; what it may take is a preemption
		// on a busy machine, never the 20 ms asked above.
		if z := For(m, 0); z >= 20*time.Millisecond {
			t.Errorf("%v: a zero block took %s", m, z)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"sleep", "syscall", "spin"} {
		m, err := ParseMode(s)
		if err != nil || m.String() != s {
			t.Errorf("%q: %v %v", s, m, err)
		}
	}
	if _, err := ParseMode("nap"); err == nil {
		t.Error("nap accepted")
	}
}
