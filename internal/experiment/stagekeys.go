package experiment

import (
	"slices"
	"sync"

	"github.com/bystander-kit/bystander/internal/stage"
)

// stageControl is the presenter's state: paused, and the screens asked
// for; while the slip measures, the first "next" is its (onNext).
type stageControl struct {
	mu     sync.Mutex
	paused bool
	asks   []string
	wake   chan struct{}
	onNext func() bool
}

// stageKeys gives the presenter's keys from hub to a stageControl as they
// come: the page is answered 503 for a key it has no room for.
func stageKeys(hub *stage.Hub) *stageControl {
	ctl := &stageControl{wake: make(chan struct{}, 1)}
	hub.Take(ctl.take)
	return ctl
}

// hookNext gives the next "next" to f (nil: to the slides again); f says
// whether it took the key.
func (c *stageControl) hookNext(f func() bool) {
	c.mu.Lock()
	c.onNext = f
	c.mu.Unlock()
}

// take takes a key, and says whether it did: a pause at once, a key
// asking for slides in turn, stage.MaxKeys of them waiting at most (a
// repeat waiting already is not queued twice: a held-down R, or 2,000
// posted at once, measure again once).
func (c *stageControl) take(key string) bool {
	c.mu.Lock()
	if f := c.onNext; key == "next" && f != nil {
		c.onNext = nil
		c.mu.Unlock()
		if f() {
			return true
		}
		c.mu.Lock()
	}
	switch {
	case key == "pause":
		c.paused = !c.paused
	case key == "repeat" && slices.Contains(c.asks, key):
	case len(c.asks) >= stage.MaxKeys:
		c.mu.Unlock()
		return false
	default:
		c.asks = append(c.asks, key)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *stageControl) next() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asks) == 0 {
		return "", false
	}
	k := c.asks[0]
	c.asks = c.asks[1:]
	return k, true
}

func (c *stageControl) isPaused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}
