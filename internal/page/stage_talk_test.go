package page

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// TestTalkFile opens the committed recording as a talk file (report
// --talk) from disk, with no server running and every request watched
// (none but file: and data:), as the speaker view (#presenter). O opens
// the room's window (window.open) and the speaker view drives it
// (postMessage): the room opens on the cover, then the clicker's keys walk
// every slide in both windows, the room showing none of the speaker's
// lines and passing stageCheck on every slide; P and R, which measure,
// are said not taken.
func TestTalkFile(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	frames, err := stage.Recording(talkRecording)
	if err != nil {
		t.Fatal(err)
	}
	b, err := writeTalkPage(a, frames)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "talk.html")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pctx, problems := browsertest.Open(t, chrome, 1600, 900)
	var mu sync.Mutex
	var asked []string
	strict := func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(e.Request.URL, "file:") && !strings.HasPrefix(e.Request.URL, "data:") {
			mu.Lock()
			asked = append(asked, e.Request.URL)
			mu.Unlock()
		}
	}
	if err := chromedp.Listen(pctx, strict); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(pctx, chromedp.Navigate("file://"+file+"#presenter")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames === %d && window.stageView.view === -2", len(frames)), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the talk did not load from itself: %v; %q", err, problems())
	}
	// O: the room's window, opened by the speaker view.
	opened := chromedp.WaitNewTarget(pctx, func(i *target.Info) bool { return strings.HasPrefix(i.URL, "file://") })
	press(t, pctx, "o")
	var id target.ID
	select {
	case id = <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("O opened no room's window")
	}
	rctx, cancel := chromedp.NewContext(pctx, chromedp.WithTargetID(id))
	defer cancel()
	if err := chromedp.Listen(rctx, strict); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(rctx, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(rctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames === %d && window.stageView.view === -2 && !document.documentElement.classList.contains('presenter')", len(frames)), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the room's window did not open on the cover: %v", err)
	}
	if _, err := chromedp.Run(rctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		View, Screen int
		Focus        string
		Problems     []string
		Cover        string
	}
	const look = `({View: window.stageView.view, Screen: window.stageView.screen, Focus: window.stageView.focus, Problems: window.stageCheck(), Cover: document.getElementById('cover').innerText})`
	room, err := chromedp.Run(rctx, chromedp.Evaluate[seen](look))
	if err != nil {
		t.Fatal(err)
	}
	if len(room.Problems) > 0 || !strings.Contains(room.Cover, "What one blocking call does to everyone else") || !strings.Contains(room.Cover, "loop-gnet (4 event loops) beside pool (200 threads)") {
		t.Errorf("the room's cover: %+v", room)
	}
	var walked []string
	for i := 0; i < 20; i++ {
		press(t, pctx, kb.PageDown)
		want := i
		if i == 10 {
			want = -1 // the last slide
		}
		cond := fmt.Sprintf("window.stageView.view === %d", want)
		if _, err := chromedp.Run(pctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Fatalf("PageDown %d: the speaker view is not on slide %d", i, want)
		}
		if _, err := chromedp.Run(rctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Fatalf("PageDown %d: the room's window did not follow the speaker view to slide %d", i, want)
		}
		got, err := chromedp.Run(rctx, chromedp.Evaluate[seen](look))
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, fmt.Sprintf("%d:%s", got.Screen, got.Focus))
		for _, p := range got.Problems {
			t.Errorf("the room's slide %d (screen %d %s): %s", i, got.Screen, got.Focus, p)
		}
		if want == -1 {
			break
		}
	}
	if got := strings.Join(walked, " "); got != "1: 2: 3: 4:stall-loop-gnet-k1 4:stall-loop-gnet-k2 4:stall-loop-gnet-k3 4:stall-loop-gnet-k4 4:stall-pool-k4 5: 6:slip-loop-gnet 6:slip-pool" {
		t.Errorf("the talk walked %s", got)
	}
	// The speaker view drove the room by the window it opened (postMessage),
	// whatever a BroadcastChannel between file: pages does.
	if via, err := chromedp.Run(rctx, chromedp.Evaluate[map[string]int](`window.stageVia`)); err != nil || via["window"] == 0 || via["window"]+via["channel"] < len(walked) {
		t.Errorf("the room took %v of %d keys, none by postMessage (%v)", via, len(walked), err)
	}
	// Past the end, and the keys that measure: said in the speaker view.
	for _, k := range []string{kb.PageDown, "p", "r"} {
		press(t, pctx, k)
	}
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](`(window.stageToasts || []).filter(m => /the end of the recorded talk|a recorded talk measures nothing/.test(m)).length >= 2`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		toasts, _ := chromedp.Run(pctx, chromedp.Evaluate[[]string](`window.stageToasts || []`))
		t.Errorf("past the end and P, R: the speaker view said %q", toasts)
	}
	// Back and Home move both windows; B blanks the room's alone.
	press(t, pctx, kb.Home)
	press(t, pctx, "b")
	if _, err := chromedp.Run(rctx, chromedp.Poll[bool](`window.stageView.view === 0 && getComputedStyle(document.getElementById('blank')).display === 'block'`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Error("Home and B did not reach the room's window")
	}
	// What the room's window loaded before this test could listen to it:
	// the browser's own account of its resources.
	var loaded []string
	for _, ctx := range []context.Context{pctx, rctx} {
		res, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name).filter(u => !/^(file|data):/.test(u))`))
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, res...)
	}
	mu.Lock()
	defer mu.Unlock()
	asked = append(asked, loaded...)
	if len(asked) > 0 {
		t.Errorf("the talk file asked for %q", asked)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") {
			t.Error(p)
		}
	}
}
