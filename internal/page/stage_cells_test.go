package page

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
)

// withWaits is the committed recording with each connection's median
// wait by the server's clock on its live events (live), and at each stall
// step's end the report's cells (final), made up here, different from
// the live ones and the recording's, so that a page showing either is
// told apart. It gives the path and the final waits by step and
// connection.
func withWaits(t *testing.T, live, final func(conn int, stalled bool) float64) (string, map[string]map[int]float64) {
	t.Helper()
	type conn struct {
		Loop    int
		Stalled bool
	}
	last := map[string]map[int]conn{}
	cells := map[string]map[int]float64{}
	path := rewritten(t, func(ev map[string]any) {
		switch ev["k"] {
		case "conn":
			id, c, stalled := ev["id"].(string), int(ev["conn"].(float64)), ev["stalled"].(bool)
			if last[id] == nil {
				last[id] = map[int]conn{}
			}
			last[id][c] = conn{Loop: int(ev["loop"].(float64)), Stalled: stalled}
			ev["wait_ms"] = live(c, stalled)
		case "step":
			row, _ := ev["row"].(map[string]any)
			v, _ := row["stall"].(map[string]any)
			if v == nil {
				return
			}
			id := ev["id"].(string)
			var cs []map[string]any
			cells[id] = map[int]float64{}
			for c, x := range last[id] {
				w := final(c, x.Stalled)
				cells[id][c] = w
				cs = append(cs, map[string]any{"conn": c, "loop": x.Loop, "wait_ms": w, "stalled": x.Stalled})
			}
			v["cells"] = cs
		}
	})
	return path, cells
}

// withoutWaits is the committed recording as a stage made it before it
// sent the waits (issue 51): no wait_ms on a connection's events, no
// cells in a stall step's row.
func withoutWaits(t *testing.T) string {
	t.Helper()
	return rewritten(t, func(ev map[string]any) {
		switch ev["k"] {
		case "conn":
			delete(ev, "wait_ms")
		case "step":
			row, _ := ev["row"].(map[string]any)
			if v, _ := row["stall"].(map[string]any); v != nil {
				delete(v, "cells")
			}
		}
	})
}

// rewritten is the committed recording with each event changed by edit,
// in order, written to a temporary file: its path.
func rewritten(t *testing.T, edit func(ev map[string]any)) string {
	t.Helper()
	f, err := os.Open(talkRecording)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for first := true; sc.Scan(); first = false {
		if first {
			out.WriteString(sc.Text() + "\n")
			continue
		}
		var fr map[string]any
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatal(err)
		}
		for _, e := range fr["events"].([]any) {
			edit(e.(map[string]any))
		}
		b, err := json.Marshal(fr)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stage.ndjson")
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// screen4Seen is a slide of screen 4 as the room and the speaker see it.
type screen4Seen struct {
	Focus, Caption, Notes string
	Cells                 []string
	Grid                  map[string]struct {
		Wait    *float64
		Ms      float64
		Stalled bool
	}
	Problems []string
}

// walkScreen4 replays the recording at path in the room's window and the
// speaker view, and gives each slide of screen 4 as both show it.
func walkScreen4(t *testing.T, chrome, path string) []screen4Seen {
	t.Helper()
	srv, frames := replayedFrom(t, path)
	sctx, sproblems := browsertest.Open(t, chrome, 1280, 720)
	pctx, pproblems := browsertest.Tab(t, sctx, 1600, 900)
	ready := fmt.Sprintf("window.stageFrames >= %d", frames)
	for _, w := range []struct {
		ctx  context.Context
		path string
	}{{sctx, "/"}, {pctx, "/presenter"}} {
		if err := chromedp.Do(w.ctx, chromedp.Navigate(srv.URL+w.path)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(w.ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("%s: the frames did not arrive: %v", w.path, err)
		}
	}
	if _, err := chromedp.Run(sctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
		t.Fatal(err)
	}
	press(t, pctx, kb.Home)
	var out []screen4Seen
	for slide := 1; slide <= 8; slide++ {
		press(t, pctx, kb.PageDown)
		want := fmt.Sprintf("window.stageView.view === %d", slide)
		for _, ctx := range []context.Context{pctx, sctx} {
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](want, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(5*time.Second))); err != nil {
				t.Fatalf("slide %d: %v", slide, err)
			}
		}
		on, err := chromedp.Run(sctx, chromedp.Evaluate[int](`window.stageView.screen`))
		if err != nil {
			t.Fatal(err)
		}
		if on != 4 {
			continue
		}
		got := checkSlide(t, sctx)
		seen, err := chromedp.Run(sctx, chromedp.Evaluate[screen4Seen](`({Focus: window.stageView.focus, Caption: document.getElementById('gridsays').textContent,
		  Cells: [...document.querySelectorAll('#grid .cell')].map(c => c.textContent).filter(x => x !== '-'),
		  Grid: Object.fromEntries(Object.entries(window.stageState.grids[window.stageView.focus] || {}).map(([c, x]) => [c, {Wait: x.wait === undefined ? null : x.wait, Ms: x.ms || 0, Stalled: !!x.stalled}]))})`))
		if err != nil {
			t.Fatal(err)
		}
		if seen.Notes, err = chromedp.Run(pctx, chromedp.Evaluate[string](`document.getElementById('pnotes').textContent`)); err != nil {
			t.Fatal(err)
		}
		seen.Problems = got.Problems
		out = append(out, seen)
	}
	for _, p := range append(sproblems(), pproblems()...) {
		if !strings.Contains(p, "favicon") {
			t.Error(p)
		}
	}
	if len(out) != 5 {
		t.Fatalf("%d slides of screen 4, want the recording's 5", len(out))
	}
	return out
}

// TestStageCellsAreTheReports: screen 4's cells show one measure, the
// report's: each connection's median wait by the server's clock, live as
// the stage sends it and, at the step's end, the report's own cells (the
// numbers the report's heatmap shows, to its tenth of a ms); the caption
// and the speaker's notes say what the number is and why a stalled one
// is that big; the committed recording shows its own cells, the
// report's. A recording made before the stage sent the wait (the
// committed one with its waits taken out) shows each connection's slowest
// answer instead, and says so in the caption and the notes.
func TestStageCellsAreTheReports(t *testing.T) {
	chrome := browsertest.Chromium(t)
	live := func(c int, stalled bool) float64 {
		if stalled {
			return 81.25 + float64(c)
		}
		return 0.55 + float64(c)/100
	}
	final := func(c int, stalled bool) float64 {
		if stalled {
			return 97.34 + float64(c)/10
		}
		return 0.31 + float64(c)/100
	}
	path, cells := withWaits(t, live, final)
	medians(t, walkScreen4(t, chrome, path), cells)

	// The committed recording as it is: its own cells, the report's.
	recorded := map[string]map[int]float64{}
	rewritten(t, func(ev map[string]any) {
		row, _ := ev["row"].(map[string]any)
		v, _ := row["stall"].(map[string]any)
		cs, _ := v["cells"].([]any)
		for _, c := range cs {
			c := c.(map[string]any)
			id := ev["id"].(string)
			if recorded[id] == nil {
				recorded[id] = map[int]float64{}
			}
			recorded[id][int(c["conn"].(float64))] = c["wait_ms"].(float64)
		}
	})
	if len(recorded) == 0 {
		t.Fatalf("%s has no stall step with its cells: a recording made before the stage sent them", talkRecording)
	}
	medians(t, walkScreen4(t, chrome, talkRecording), recorded)

	// A recording without waits: the slowest answer, said.
	for _, s := range walkScreen4(t, chrome, withoutWaits(t)) {
		for _, p := range s.Problems {
			t.Errorf("the recording without waits, %s: %s", s.Focus, p)
		}
		for c, x := range s.Grid {
			if x.Wait != nil {
				t.Errorf("%s: connection %s has a wait the recording has not: %v", s.Focus, c, *x.Wait)
			}
		}
		if !strings.Contains(s.Caption, "slowest /fast answer") || !strings.Contains(s.Caption, "an older recording: no median") {
			t.Errorf("%s: the caption over slowest answers says %q", s.Focus, s.Caption)
		}
		if strings.HasSuffix(s.Focus, "-k1") && (!strings.Contains(s.Notes, "This recording's cells are each connection's slowest answer") || !strings.Contains(s.Notes, "ms for a 100 ms call")) {
			t.Errorf("%s: the notes on a recording without waits: %q", s.Focus, s.Notes)
		}
	}
}

// medians checks screen 4's slides against the report's cells by step and
// connection: each cell the report's median wait, the caption and the
// speaker's notes saying what it is and why a stalled one is that big.
func medians(t *testing.T, slides []screen4Seen, cells map[string]map[int]float64) {
	t.Helper()
	for _, s := range slides {
		for _, p := range s.Problems {
			t.Errorf("%s: %s", s.Focus, p)
		}
		want := cells[s.Focus]
		if len(want) == 0 || len(s.Cells) != len(want) {
			t.Errorf("%s: %d cells shown, the report has %d", s.Focus, len(s.Cells), len(want))
		}
		var lit []float64
		for c, w := range want {
			x, ok := s.Grid[fmt.Sprint(c)]
			if !ok || x.Wait == nil || math.Abs(*x.Wait-w) > 1e-9 {
				t.Errorf("%s: connection %d ends on %+v, the report's cell says %v ms", s.Focus, c, x, w)
			}
			if x.Stalled {
				lit = append(lit, w)
			}
		}
		if !strings.Contains(s.Caption, "its requests waiting (median ms, as the report gives it)") {
			t.Errorf("%s: the caption says %q", s.Focus, s.Caption)
		}
		if !strings.Contains(s.Notes, "the median, by the server's own clock: the report's heatmap, the same numbers") {
			t.Errorf("%s: the speaker's notes do not say what a cell is: %q", s.Focus, s.Notes)
		}
		if len(lit) > 0 && !strings.Contains(s.Notes, "A stalled one, ") || len(lit) > 0 && !strings.Contains(s.Notes, "ms of a 100 ms call: its loop runs the call again and again, so its request waits behind a call before the loop reads it and behind another before its answer goes out, about two calls") {
			t.Errorf("%s: the notes do not say why a stalled one is that big: %q", s.Focus, s.Notes)
		}
	}
}
