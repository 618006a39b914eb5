package pace

import (
	"context"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	ctx := context.Background()
	for _, d := range []time.Duration{-time.Millisecond, 0, 300 * time.Microsecond, 5 * time.Millisecond} {
		due := time.Now().Add(d)
		if !Until(ctx, due) {
			t.Fatal("not reached")
		}
		if time.Now().Before(due) {
			t.Fatalf("%s: returned early", d)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if Until(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("reached an hour away with a cancelled context")
	}
}

// TestSleep: it returns at the moment or after it, and false when the
// context ends first.
func TestSleep(t *testing.T) {
	at := time.Now().Add(20 * time.Millisecond)
	if !Sleep(context.Background(), at) || time.Now().Before(at) {
		t.Fatal("returned before the moment")
	}
	if !Sleep(context.Background(), time.Now().Add(-time.Second)) {
		t.Fatal("a moment passed is reached")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("an ended context reached the moment")
	}
}
