package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/results"
)

// lagTap reads a loop server's /lag stream while a measurement runs: what
// each loop's own heartbeat and the blocked-loop detector saw.
type lagTap struct {
	cancel context.CancelFunc
	done   chan []lag.Event
	err    error
}

// tapLag starts reading srv's lag stream for at most limit; nil for a
// server that has none (the pool server).
func tapLag(ctx context.Context, srv *server, limit time.Duration, onEvent func(lag.Event)) *lagTap {
	if srv.kind != "loop" || srv.admin == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	t := &lagTap{cancel: cancel, done: make(chan []lag.Event, 1)}
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/lag?for=%s", srv.admin, limit), nil)
	if err != nil {
		t.err = err
		t.done <- nil
		return t
	}
	got := make(chan struct{})
	go func() {
		var evs []lag.Event
		defer func() { t.done <- evs }()
		resp, err := http.DefaultClient.Do(req)
		close(got)
		if err != nil {
			t.err = err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.err = fmt.Errorf("/lag: %s", resp.Status)
			return
		}
		// As much as the run directory's reader takes back, no more.
		dec := json.NewDecoder(io.LimitReader(resp.Body, results.MaxFileBytes))
		for dec.More() {
			var ev lag.Event
			if err := dec.Decode(&ev); err != nil {
				if ctx.Err() == nil {
					t.err = err
				}
				return
			}
			evs = append(evs, ev)
			if onEvent != nil {
				onEvent(ev)
			}
		}
	}()
	select { // the stream starts before the measurement does
	case <-got:
	case <-time.After(2 * time.Second):
	}
	return t
}

// finish waits one more event for the window's tail, stops reading, and
// writes what was read to rel in dir with the measured window; it returns
// rel, or "" when there was nothing to keep.
func (t *lagTap) finish(dir, rel, server string, start, end time.Time) (string, error) {
	if t == nil {
		return "", nil
	}
	if wait := time.Until(end.Add(lag.MinEvery + 20*time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	t.cancel()
	evs := <-t.done
	if len(evs) == 0 {
		if t.err != nil {
			return "", fmt.Errorf("loop lag: %w", t.err)
		}
		return "", nil
	}
	tr := results.LagTrace{Schema: results.LagSchema, Server: server, StartUnixNs: start.UnixNano(), EndUnixNs: end.UnixNano(), Events: evs}
	b, err := json.Marshal(tr)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
		return "", err
	}
	return rel, nil
}

// stop ends the reading if finish did not (a failed measurement).
func (t *lagTap) stop() {
	if t != nil {
		t.cancel()
	}
}
