// Package stage serves the live view of run.sh --stage: a page on a
// loopback address that gets, four times a second, a frame of what the
// experiment saw since the last one, pushed as Server-Sent Events; the
// presenter's keys come back as POST /control. Every frame is also written
// to the run directory (stage.ndjson), and Replay plays such a file back
// at its real pace, without servers.
package stage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// Every is how often a frame goes out, with whatever it holds (an empty
// frame still says the stage is alive).
const Every = 250 * time.Millisecond

// Frame is what the page gets at each tick: the events since the last
// (each a JSON object whose "k" names its kind, events.go), T ms after the
// stage began.
type Frame struct {
	Seq    int64             `json:"seq"`
	T      int64             `json:"t"`
	Events []json.RawMessage `json:"events"`
}

// Hub gathers events into frames, sends them to every page and records
// them; a page that opens late is sent every frame so far first.
type Hub struct {
	mu      sync.Mutex
	start   time.Time
	seq     int64
	pending []json.RawMessage
	maxed   map[string]int     // key -> index in pending (AddMax)
	maxv    map[string]float64 // key -> the value of the event kept
	frames  [][]byte
	clients map[chan []byte]bool
	rec     *os.File
	control chan string
	take    func(key string) bool // Take's, or nil: keys go to control
	page    []byte
	hosts   map[string]bool // the Host values the page may be reached at (Allow)
	// connected is closed when the first page opens the frames.
	connected chan struct{}
}

// ControlHeader is the header the stage's page sends with every key: a
// request carrying it is not a "simple" one, so a browser asks the stage
// first (a CORS preflight, which it does not grant) before another site's
// page may send it; a form or a text/plain POST from elsewhere cannot.
const ControlHeader = "X-Bystander-Stage"

// Allow says where the page is served (its loopback address): the keys
// are taken only from requests for that host and port (as 127.0.0.1,
// localhost or ::1), from the page's own origin when the browser says one.
func (h *Hub) Allow(addr string) {
	_, port, err := net.SplitHostPort(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hosts = map[string]bool{addr: true}
	if err == nil {
		for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
			h.hosts[host+":"+port] = true
		}
	}
}

// ownPage says why a key cannot be taken from r, or "".
func (h *Hub) ownPage(r *http.Request) string {
	h.mu.Lock()
	ok := h.hosts[r.Host]
	h.mu.Unlock()
	switch {
	case !ok:
		return fmt.Sprintf("Host %q is not the stage's address", r.Host)
	case r.Header.Get("Origin") != "" && r.Header.Get("Origin") != "http://"+r.Host:
		return fmt.Sprintf("Origin %q is not the stage's page", r.Header.Get("Origin"))
	case r.Header.Get(ControlHeader) == "":
		return "a key needs the " + ControlHeader + " header the stage's page sends"
	}
	return ""
}

// NewHub records to path ("" records nothing) and serves page at "/" and
// "/presenter" (the speaker view: the page tells the two apart).
func NewHub(path string, page []byte) (*Hub, error) {
	h := &Hub{start: time.Now(), maxed: map[string]int{}, maxv: map[string]float64{}, clients: map[chan []byte]bool{}, control: make(chan string, MaxKeys), page: page,
		connected: make(chan struct{})}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("stage: %w", err)
		}
		if _, err := fmt.Fprintf(f, "{\"schema\":%q}\n", Schema); err != nil {
			f.Close()
			return nil, fmt.Errorf("stage: %w", err)
		}
		h.rec = f
	}
	return h, nil
}

// Add queues an event for the next frame.
func (h *Hub) Add(ev Event) {
	b, err := encode(ev)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, b)
}

// AddMax queues ev for the next frame unless an event with the same key
// and a larger value is already queued: many probes a frame on one
// connection go out as the slowest.
func (h *Hub) AddMax(key string, ev Event, value float64) {
	b, err := encode(ev)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if i, ok := h.maxed[key]; ok {
		if value > h.maxv[key] {
			h.pending[i], h.maxv[key] = b, value
		}
		return
	}
	h.maxed[key], h.maxv[key] = len(h.pending), value
	h.pending = append(h.pending, b)
}

// Ms is t in the stage's clock: ms since it began, as frames count.
func (h *Hub) Ms(t time.Time) int64 { return t.Sub(h.start).Milliseconds() }

// MaxKeys is how many of the presenter's keys may wait for the stage: past
// it a key is answered 503, which the page says.
const MaxKeys = 16

// Control gives the presenter's keys: next, pause, repeat, or "goto N"
// (a screen not shown yet; the page goes back to one shown by itself).
// MaxKeys wait in it at most.
func (h *Hub) Control() <-chan string { return h.control }

// Take hands each key to f as it comes, in place of Control: f keeps its
// own queue, bounded, and says whether it took the key (false: MaxKeys
// wait already, and the key is answered 503).
func (h *Hub) Take(f func(key string) bool) {
	h.mu.Lock()
	h.take = f
	h.mu.Unlock()
}

// give hands key to Take's function, or queues it for Control without
// ever blocking the page; false when there is no room for it.
func (h *Hub) give(key string) bool {
	h.mu.Lock()
	f := h.take
	h.mu.Unlock()
	if f != nil {
		return f(key)
	}
	select {
	case h.control <- key:
		return true
	default:
		return false
	}
}

// Flush sends the pending events as one frame now.
func (h *Hub) Flush() {
	h.mu.Lock()
	f := Frame{Seq: h.seq, T: time.Since(h.start).Milliseconds(), Events: h.pending}
	if f.Events == nil {
		f.Events = []json.RawMessage{}
	}
	h.seq++
	h.pending, h.maxed, h.maxv = nil, map[string]int{}, map[string]float64{}
	h.mu.Unlock()
	h.send(f)
}

// send records a frame and gives it to every page.
func (h *Hub) send(f Frame) {
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.frames = append(h.frames, b)
	if h.rec != nil {
		_, _ = h.rec.Write(append(b, '\n'))
	}
	for c := range h.clients {
		select {
		case c <- b:
		default: // a page that cannot keep up misses a frame, never stalls the stage
		}
	}
}

// Run flushes a frame every Every until ctx ends, then a last one.
func (h *Hub) Run(ctx context.Context) {
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.Flush()
			return
		case <-t.C:
			h.Flush()
		}
	}
}

// WaitPage waits until a page has opened the frames (its echarts loaded:
// the page opens them only then), for d at most; it says whether one did.
func (h *Hub) WaitPage(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.connected:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// Close ends the recording.
func (h *Hub) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		return nil
	}
	err := h.rec.Close()
	h.rec = nil
	return err
}

// ServeHTTP serves the page (/ and /presenter), the frames (/events) and
// the keys (/control).
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/", "/presenter":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(h.page)
	case "/events":
		h.events(w, r)
	case "/control":
		if r.Method != http.MethodPost {
			http.Error(w, "POST next, pause, repeat or goto N", http.StatusMethodNotAllowed)
			return
		}
		if why := h.ownPage(r); why != "" {
			http.Error(w, "stage: "+why, http.StatusForbidden)
			return
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		key := strings.TrimSpace(string(b))
		if _, ok := GotoScreen(key); !ok && key != "next" && key != "pause" && key != "repeat" {
			http.Error(w, "want next, pause, repeat or goto N (a screen, 1 to 9)", http.StatusBadRequest)
			return
		}
		if !h.give(key) { // never block the page; say the key was lost, the page shows it
			http.Error(w, fmt.Sprintf("the stage has %d keys waiting: this one was dropped", MaxKeys), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (h *Hub) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	c := make(chan []byte, 64)
	h.mu.Lock()
	past := append([][]byte(nil), h.frames...)
	h.clients[c] = true
	select {
	case <-h.connected:
	default:
		close(h.connected)
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.clients, c)
		h.mu.Unlock()
	}()
	write := func(b []byte) bool {
		_, err := fmt.Fprintf(w, "data: %s\n\n", b)
		return err == nil
	}
	for _, b := range past {
		if !write(b) {
			return
		}
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-c:
			if !write(b) {
				return
			}
			fl.Flush()
		}
	}
}

// Serve listens on addr (a loopback address) and serves the hub until ctx
// ends; it returns the address it listens on.
func Serve(ctx context.Context, addr string, h http.Handler) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("stage: --stage-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("stage: --stage-addr %q: the stage serves on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("stage: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
	}()
	return ln.Addr().String(), nil
}

// ErrNoFrames: a replay file without a frame.
var ErrNoFrames = errors.New("stage: the recording holds no frame")

// A recording may come from a stranger: it is read as it is played, a line
// at most MaxLine bytes, the file at most MaxRecording.
const (
	MaxLine      = 1 << 20
	MaxRecording = 512 << 20
)

// Replay reads a recording (stage.ndjson) and sends its frames through h
// at their recorded pace, from the first, as it reads them; on the control
// channel, "pause" stops and restarts the clock, "next" plays at once up to
// the next slide the recording shows and "goto N" up to screen N, from
// where the recorded pace resumes. It returns when the last frame is sent.
func Replay(ctx context.Context, path string, h *Hub) (int, error) {
	return ReplayWith(ctx, path, h, ReplayOptions{})
}

// ReplayOptions change how a recording is played: Instant sends every
// frame at once, unpaced; Until, when set, stops before the first frame it
// holds true for (a screenshot of how a screen ended).
type ReplayOptions struct {
	Instant bool
	Until   func(Frame) bool
}

// ReplayWith is Replay as o says.
func ReplayWith(ctx context.Context, path string, h *Hub, o ReplayOptions) (int, error) {
	f, sc, err := openRecording(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	var first int64
	begin := time.Now()
	// shift moves every frame's moment: a pause adds how long it lasted;
	// a skip takes out what it skipped. skip, while not 0, sends the frames
	// at once up to the next slide (-1, the key "next") or to screen N or
	// later ("goto N"), where the recorded pace resumes.
	var shift time.Duration
	skip := 0
	for sc.Scan() {
		var fr Frame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			return n, fmt.Errorf("stage: --replay %s: line %d: %w", path, n+2, err)
		}
		opens, err := screenOpened(fr)
		if err != nil {
			return n, fmt.Errorf("stage: --replay %s: line %d: %w", path, n+2, err)
		}
		if o.Until != nil && o.Until(fr) {
			break
		}
		if n == 0 {
			first = fr.T
		}
		at := time.Duration(fr.T-first) * time.Millisecond
		if skip != 0 && opens > 0 && (skip < 0 || opens >= skip) {
			skip, shift = 0, time.Since(begin)-at // here the pace resumes
		}
		for !o.Instant && skip == 0 {
			wait := at + shift - time.Since(begin)
			if wait <= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case key := <-h.control:
				switch g, isGoto := GotoScreen(key); {
				case key == "pause":
					at := time.Now()
					if !waitKey(ctx, h.control, "pause") {
						return n, ctx.Err()
					}
					shift += time.Since(at)
				case key == "next":
					skip = -1
				case isGoto:
					skip = g
				}
				if skip != 0 && opens > 0 && (skip < 0 || opens >= skip) {
					skip, shift = 0, time.Since(begin)-at // this frame opens it: now
				}
			case <-time.After(wait):
			}
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		h.send(fr)
		n++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return n, fmt.Errorf("stage: --replay %s: line %d is over %d bytes: not a recording of the kit's", path, n+2, MaxLine)
		}
		return n, fmt.Errorf("stage: --replay: %w", err)
	}
	if n == 0 {
		return 0, ErrNoFrames
	}
	return n, nil
}

// openRecording opens a recording (confined, capped) and reads its first
// line, which must be the schema's.
func openRecording(path string) (*os.File, *bufio.Scanner, error) {
	f, err := files.OpenIn(filepath.Dir(path), filepath.Base(path), MaxRecording)
	if err != nil {
		return nil, nil, fmt.Errorf("stage: --replay: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var head struct {
		Schema string `json:"schema"`
	}
	if !sc.Scan() {
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("stage: --replay: %w", err)
		}
		return nil, nil, ErrNoFrames
	}
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil || head.Schema != Schema {
		f.Close()
		return nil, nil, fmt.Errorf("stage: --replay %s: its first line is not %s's: a recording made before it, or not one of the kit's (record it again with ./run.sh --stage)", path, Schema)
	}
	return f, sc, nil
}

// screenOpened is the highest screen a "screen" event of fr opens (0:
// none), or an error for an event of a kind the page cannot play.
func screenOpened(fr Frame) (int, error) {
	opens := 0
	for _, ev := range fr.Events {
		var k struct {
			K      string `json:"k"`
			Screen int    `json:"screen"`
		}
		if json.Unmarshal(ev, &k) != nil || !slices.Contains(Kinds, k.K) {
			return 0, fmt.Errorf("an event of a kind this page cannot play (%.60s)", ev)
		}
		if k.K == "screen" {
			opens = max(opens, k.Screen, 1)
		}
	}
	return opens, nil
}

// Recording reads a recording (stage.ndjson) whole, checked as Replay
// checks it: its frames, a JSON line each (a talk file carries them).
func Recording(path string) ([][]byte, error) {
	h, err := NewHub("", nil)
	if err != nil {
		return nil, err
	}
	if _, err := ReplayWith(context.Background(), path, h, ReplayOptions{Instant: true}); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.frames), nil
}

// GotoScreen reads a "goto N" key: the screen N, 1 to 9.
func GotoScreen(key string) (int, bool) {
	n, ok := strings.CutPrefix(key, "goto ")
	if !ok || len(n) != 1 || n[0] < '1' || n[0] > '9' {
		return 0, false
	}
	return int(n[0] - '0'), true
}

// waitKey waits for key on c.
func waitKey(ctx context.Context, c <-chan string, key string) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case k := <-c:
			if k == key {
				return true
			}
		}
	}
}
