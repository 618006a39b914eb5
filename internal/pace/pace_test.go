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
