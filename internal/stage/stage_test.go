package stage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// frames reads n SSE frames from url.
func frames(t *testing.T, url string, n int) []Frame {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var out []Frame
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		if b, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var f Frame
			if err := json.Unmarshal([]byte(b), &f); err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
	}
	return out
}

// Events go out in frames; AddMax keeps one per key per frame, the
// largest; a page that opens late gets every frame so far; every frame is
// recorded.
func TestHub(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "stage.ndjson")
	h, err := NewHub(rec, []byte("<html>page</html>"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	h.Add(Hello{Loops: 4})
	for _, ms := range []float64{3, 9, 4} {
		h.AddMax("conn/1", Conn{Conn: 1, Ms: ms}, ms)
	}
	h.AddMax("conn/2", Conn{Conn: 2, Ms: 1.0}, 1.0)
	h.Flush()
	h.Flush() // an empty frame still goes out
	got := frames(t, srv.URL+"/events", 2)
	if len(got) != 2 || len(got[0].Events) != 3 || len(got[1].Events) != 0 || got[1].Seq != 1 {
		t.Fatalf("frames %+v", got)
	}
	var first Conn
	if err := json.Unmarshal(got[0].Events[1], &first); err != nil || first.Ms != 9 || !strings.HasPrefix(string(got[0].Events[1]), `{"k":"conn",`) ||
		string(got[0].Events[0]) != `{"k":"hello","loops":4,"slots":0,"block_ms":0,"stall_block_ms":0,"conc":null,"servers_kind":null,"ceiling":null,"ceiling_text":null,"colors":null,"pale":null,"stall_conns":0,"engines":null,"rule":""}` {
		t.Fatalf("events %s", got[0].Events)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rec)
	if n := strings.Count(string(b), "\n"); n != 3 || !strings.HasPrefix(string(b), `{"schema":"`+Schema+`"}`+"\n") {
		t.Fatalf("recording %q: want the schema line and 2 frames", b)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("page: %v", err)
	}
	h.Allow(srv.Listener.Addr().String())
	for _, tc := range []struct {
		body string
		want int
	}{{"next", 204}, {"pause", 204}, {"jump", 400}} {
		if code := post(t, srv.URL+"/control", tc.body, "", "", true); code != tc.want {
			t.Fatalf("POST %s: %d", tc.body, code)
		}
	}
	// The keys arrive in the order they were pressed; a refused one not at all.
	if a, b := <-h.Control(), <-h.Control(); a != "next" || b != "pause" || len(h.Control()) != 0 {
		t.Fatalf("control %q then %q, %d more", a, b, len(h.Control()))
	}
}

// post sends a key as a page would: host and origin override the request's
// own when given; page says whether it carries the stage page's header.
func post(t *testing.T, url, body, host, origin string, page bool) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if page {
		req.Header.Set(ControlHeader, "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestControlOwnPageOnly: the keys are taken only from the stage's own
// page: a request for another Host (DNS rebinding), from another Origin,
// or without the page's header (a simple cross-site form or text/plain
// POST, which needs no preflight) is refused and moves nothing.
func TestControlOwnPageOnly(t *testing.T) {
	h, err := NewHub("", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	h.Allow(addr)
	for _, tc := range []struct {
		name         string
		host, origin string
		page         bool
		want         int
	}{
		{"the page itself", "", "http://" + addr, true, 204},
		{"the page, no Origin sent", "", "", true, 204},
		{"the page, as localhost", "localhost:" + port, "http://localhost:" + port, true, 204},
		{"another site's page", "", "http://evil.example", true, 403},
		{"a rebound name", "evil.example:" + port, "http://evil.example:" + port, true, 403},
		{"a simple POST without the header", "", "", false, 403},
		{"another port", "127.0.0.1:1", "", true, 403},
	} {
		if got := post(t, srv.URL+"/control", "next", tc.host, tc.origin, tc.page); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if n := len(h.Control()); n != 3 {
		t.Errorf("%d keys taken, want the 3 from the page", n)
	}
}

// A replay sends the recorded frames as they were, at their pace.
func TestReplay(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "stage.ndjson")
	var lines []string
	for i, t := range []int64{250, 500, 750} {
		ev, _ := encode(Throughput{ID: "x", RPS: float64(i)})
		b, _ := json.Marshal(Frame{Seq: int64(i), T: t, Events: []json.RawMessage{ev}})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(rec, []byte(`{"schema":"`+Schema+`"}`+"\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := NewHub("", nil)
	start := time.Now()
	n, err := Replay(context.Background(), rec, h)
	if err != nil || n != 3 {
		t.Fatalf("%d %v", n, err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("replayed 500 ms of frames in %s: not at their pace", d)
	}
	if len(h.frames) != 3 || string(h.frames[2]) != lines[2] {
		t.Fatalf("frames %q", h.frames)
	}
	if _, err := Replay(context.Background(), filepath.Join(t.TempDir(), "none"), h); err == nil {
		t.Fatal("a missing recording replayed")
	}
	_ = os.WriteFile(rec, nil, 0o644)
	if _, err := Replay(context.Background(), rec, h); err != ErrNoFrames {
		t.Fatalf("empty recording: %v", err)
	}
	// A recording without the schema line, or with an event the page
	// cannot play, is refused with why.
	_ = os.WriteFile(rec, []byte(lines[0]+"\n"), 0o644)
	if _, err := Replay(context.Background(), rec, h); err == nil || !strings.Contains(err.Error(), Schema) {
		t.Fatalf("no schema line: %v", err)
	}
	_ = os.WriteFile(rec, []byte(`{"schema":"`+Schema+`"}`+"\n"+`{"seq":0,"t":0,"events":[{"k":"launch"}]}`+"\n"), 0o644)
	if _, err := Replay(context.Background(), rec, h); err == nil || !strings.Contains(err.Error(), "cannot play") {
		t.Fatalf("an unknown event: %v", err)
	}
}

// TestReplayBounded: a recording is a stranger's file: it is played as it
// is read, never held whole, a line over MaxLine is refused with its
// number, and a FIFO in its place is refused at once, not waited on.
func TestReplayBounded(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "stage.ndjson")
	// 2,000 frames of 20 KiB each (40 MB), all due at once.
	f, err := os.Create(rec)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 20<<10)
	fmt.Fprintf(f, "{\"schema\":%q}\n", Schema)
	for i := range 2000 {
		ev, _ := encode(State{State: pad})
		b, _ := json.Marshal(Frame{Seq: int64(i), T: 0, Events: []json.RawMessage{ev}})
		f.Write(append(b, '\n'))
	}
	f.Close()
	h, _ := NewHub("", nil)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := Replay(context.Background(), rec, h)
	if err != nil || n != 2000 {
		t.Fatalf("%d %v", n, err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// The hub keeps the frames' bytes for a page that opens late (40 MB);
	// decoding every frame first into maps took ten times the file.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 120<<20 {
		t.Errorf("replaying a 40 MB recording grew the heap by %d MB", grew>>20)
	}
	long := filepath.Join(dir, "long.ndjson")
	ev, _ := encode(State{State: strings.Repeat("y", MaxLine)})
	b, _ := json.Marshal(Frame{Seq: 0, T: 0, Events: []json.RawMessage{ev}})
	if err := os.WriteFile(long, append([]byte(`{"schema":"`+Schema+`"}`+"\n"), append(b, '\n')...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(context.Background(), long, h); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a line over the cap: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.ndjson")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Replay(context.Background(), fifo, h); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO in the recording's place hangs the replay")
	}
}

// The stage serves loopback only.
func TestServeLoopbackOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := Serve(ctx, "0.0.0.0:0", http.NotFoundHandler()); err == nil {
		t.Fatal("served on every interface")
	}
	if addr, err := Serve(ctx, "127.0.0.1:0", http.NotFoundHandler()); err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("%q %v", addr, err)
	}
}

// TestReplayWith: Instant sends every frame at once; Until stops before
// the first frame it holds true for.
func TestReplayWith(t *testing.T) {
	dir := t.TempDir()
	rec := "{\"schema\":\"" + Schema + "\"}\n"
	for i := range 5 {
		rec += fmt.Sprintf("{\"seq\":%d,\"t\":%d,\"events\":[{\"k\":\"screen\",\"screen\":%d}]}\n", i, 1000*i, i)
	}
	path := filepath.Join(dir, "stage.ndjson")
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := NewHub("", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := ReplayWith(context.Background(), path, h, ReplayOptions{Instant: true, Until: func(f Frame) bool { return f.Seq == 3 }})
	if err != nil || n != 3 || len(h.frames) != 3 {
		t.Fatalf("%d frames sent, %d kept, %v; want 3", n, len(h.frames), err)
	}
	if d := time.Since(start); d > 2*time.Second { // paced, it would take 2 s
		t.Errorf("an instant replay took %s", d)
	}
}

// TestControlKeys: the page may send next, pause, repeat and goto N (a
// screen, 1 to 9); anything else is refused with what it may send; a key
// the stage cannot queue (16 wait already) is refused, never blocks, and
// says so; the speaker view is served beside the page.
func TestControlKeys(t *testing.T) {
	h, err := NewHub("", []byte("the page"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	h.Allow(srv.Listener.Addr().String())
	for key, want := range map[string]int{"next": 204, "pause": 204, "repeat": 204, "goto 1": 204, "goto 9": 204, " goto 3\n": 204,
		"goto 0": 400, "goto 10": 400, "goto": 400, "goto x": 400, "jump 3": 400, "": 400} {
		if got := post(t, srv.URL+"/control", key, "", "", true); got != want {
			t.Errorf("%q: %d, want %d", key, got, want)
		}
	}
	for len(h.Control()) < cap(h.control) {
		if got := post(t, srv.URL+"/control", "next", "", "", true); got != 204 {
			t.Fatalf("a key with room for it: %d", got)
		}
	}
	if got := post(t, srv.URL+"/control", "next", "", "", true); got != http.StatusServiceUnavailable {
		t.Errorf("a key with no room for it: %d, want 503", got)
	}
	// Keys handed to a taker of the stage's (Take): what it does not take
	// is answered 503, what it takes 204; Control gets neither.
	var took []string
	h.Take(func(key string) bool {
		took = append(took, key)
		return key != "repeat"
	})
	if a, b := post(t, srv.URL+"/control", "next", "", "", true), post(t, srv.URL+"/control", "repeat", "", "", true); a != 204 || b != http.StatusServiceUnavailable {
		t.Errorf("taken: %d, not taken: %d, want 204 and 503", a, b)
	}
	if len(took) != 2 || len(h.Control()) != MaxKeys {
		t.Errorf("the taker got %q, Control holds %d", took, len(h.Control()))
	}
	for _, path := range []string{"/", "/presenter"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "the page" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
}

// TestReplaySkips: "next" plays a recording at once up to its next slide,
// "goto N" up to screen N, and the recorded pace resumes from there; every
// frame is sent, in order. The recording's slides are a minute apart: a
// replay that did not skip would take three.
func TestReplaySkips(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "stage.ndjson")
	lines := []string{`{"schema":"` + Schema + `"}`}
	frame := func(seq, at int64, evs ...Event) {
		f := Frame{Seq: seq, T: at, Events: []json.RawMessage{}}
		for _, ev := range evs {
			b, _ := encode(ev)
			f.Events = append(f.Events, b)
		}
		b, _ := json.Marshal(f)
		lines = append(lines, string(b))
	}
	frame(0, 0, Screen{Screen: 1})
	frame(1, 30_000, State{State: "one"})
	frame(2, 60_000, Screen{Screen: 4, Focus: "stall-x-k1"})
	frame(3, 90_000, State{State: "two"})
	frame(4, 120_000, Screen{Screen: 4, Focus: "stall-x-k2"})
	frame(5, 150_000, Screen{Screen: 5})
	frame(6, 150_200, State{State: "end"})
	if err := os.WriteFile(rec, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := NewHub("", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Replay(ctx, rec, h); done <- err }()
	sent := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.frames)
	}
	until := func(n int) {
		t.Helper()
		for sent() < n {
			select {
			case err := <-done:
				t.Fatalf("the replay ended after %d frames, want %d first: %v", sent(), n, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	until(1)
	h.control <- "next" // to the slide at 60 s: frames 1 and 2
	until(3)
	if n := sent(); n != 3 {
		t.Fatalf("next played %d frames, want up to the next slide (3)", n)
	}
	h.control <- "goto 5" // past screen 4's second slide, to screen 5 and on at its pace
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, b := range h.frames {
		if string(b) != lines[i+1] {
			t.Fatalf("frame %d: %s, want %s", i, b, lines[i+1])
		}
	}
}

// TestRecording: a recording read whole for a talk file, every frame as
// recorded and at once (not at its pace), refused as Replay refuses it.
func TestRecording(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "stage.ndjson")
	var lines []string
	for i, t := range []int64{250, 5000, 60000} {
		ev, _ := encode(Throughput{ID: "x", RPS: float64(i)})
		b, _ := json.Marshal(Frame{Seq: int64(i), T: t, Events: []json.RawMessage{ev}})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(rec, []byte(`{"schema":"`+Schema+`"}`+"\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	frames, err := Recording(rec)
	if err != nil || len(frames) != 3 || string(frames[1]) != lines[1] {
		t.Fatalf("%q %v", frames, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("a minute of frames read in %s: at their pace", d)
	}
	_ = os.WriteFile(rec, []byte(lines[0]+"\n"), 0o644)
	if _, err := Recording(rec); err == nil || !strings.Contains(err.Error(), Schema) {
		t.Errorf("no schema line: %v", err)
	}
}
