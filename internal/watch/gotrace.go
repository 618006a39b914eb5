package watch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/exp/trace"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// Bounds on the Go side of watching.
const (
	// MaxTrace is the most of a trace read (a busy service writes a few
	// MB a second).
	MaxTrace = 256 << 20
	// newestTrace is the newest Go whose traces golang.org/x/exp/trace
	// (the version in go.mod) reads: a newer one is said, not guessed.
	newestTrace = 26
	// maxSamples caps the CPU samples kept, maxGoroutines the goroutines
	// followed.
	maxSamples    = 500_000
	maxGoroutines = 1_000_000
)

// The Go functions that are the runtime's (the standard library, the
// extended one's system calls), and the servers' libraries'.
var (
	goRuntimeExtra = []string{"golang.org/x/sys/", "golang.org/x/net/", "golang.org/x/sync/"}
	goServers      = []string{"github.com/panjf2000/gnet", "github.com/panjf2000/ants", "github.com/lesismal/nbio", "github.com/lesismal/llib",
		"github.com/tidwall/evio", "github.com/cloudwego/netpoll", "github.com/bytedance/gopkg", "github.com/valyala/fasthttp"}
	// goLoops and goRequests are frames of the goroutines that serve
	// connections: event loops (gnet's, evio's, nbio's pollers; not gnet's
	// acceptor, (*eventloop).rotate) and a goroutine a connection or a
	// request (net/http's, fasthttp's workers, netpoll's handlers).
	goLoops = []string{"github.com/panjf2000/gnet/v2.(*eventloop).run", "github.com/panjf2000/gnet/v2.(*eventloop).orbit",
		"github.com/panjf2000/gnet.(*eventloop).loopRun",
		"github.com/tidwall/evio.loopRun", "github.com/lesismal/nbio.(*poller).start"}
	goRequests = []string{"net/http.(*conn).serve", "github.com/valyala/fasthttp.(*workerPool).workerFunc",
		"github.com/cloudwego/netpoll.(*connection).onProcess"}
)

// goPackage is a Go function's package path: "net/http" of
// "net/http.(*conn).serve", "main" of "main.(*ledgerClient).balance".
func goPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// goIsRuntime says the function is the standard library's (a package path
// whose first element has no dot, but main) or golang.org/x/sys's or
// x/net's.
func goIsRuntime(fn string) bool {
	pkg := goPackage(fn)
	first, _, _ := strings.Cut(pkg, "/")
	return pkg != "main" && !strings.Contains(first, ".") || hasPrefix(fn, goRuntimeExtra)
}

func goIsServer(fn string) bool { return hasPrefix(fn, goServers) }

// The Go roles.
const (
	roleGoLoop    = "event-loop goroutines"
	roleGoRequest = "request goroutines"
	roleGoOther   = "goroutines"
)

func goRole(frames []culprit.Frame) string {
	for _, f := range frames {
		switch {
		case hasPrefix(f.Function, goLoops):
			return roleGoLoop
		case hasPrefix(f.Function, goRequests):
			return roleGoRequest
		}
	}
	return roleGoOther
}

// GoTrace watches a Go service for o.Window through the execution trace
// its net/http/pprof serves at base ("http://HOST:PORT", the listener that
// serves /debug/pprof/), with a CPU profile over the same window so that
// the trace carries CPU samples (where a goroutine on a CPU was). A URL
// that does not answer a trace gives a Service with no window and why.
func GoTrace(ctx context.Context, base string, o Options) culprit.Service {
	o = o.withDefaults()
	s := culprit.Service{Source: culprit.SourceGoTrace, ThresholdNs: int64(o.Threshold)}
	u, err := pprofURL(base)
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
	}
	sleepCtx(ctx, time.Until(o.begin(time.Now()))) // a trace starts at once
	b, cpuErr, err := fetchTrace(ctx, u, o.left())
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		if len(b) == 0 {
			return s
		}
	}
	began := time.Now()
	g, err := readTrace(bytes.NewReader(b), o.Threshold)
	s.CostNs = int64(time.Since(began)) // the reading's time, on the kit's side
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		if g == nil || g.last <= g.first {
			return s
		}
	}
	s.WindowNs = int64(g.last - g.first)
	g.judge(&s)
	switch {
	case cpuErr != nil:
		s.Limits = append(s.Limits, cpuErr.Error())
	case g.noSamples:
		s.Limits = append(s.Limits, "watch: the trace holds no CPU samples: a goroutine on a CPU is named by where it stopped")
	}
	return s
}

// pprofURL is base's /debug/pprof/ as a URL: base may name the listener or
// the profiler's path.
func pprofURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("watch: pprof=%q is not a URL like http://127.0.0.1:6060 (the listener that serves /debug/pprof/)", cut(base))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/debug/pprof") + "/debug/pprof/"
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u, nil
}

// fetchTrace asks for a trace over window (and a CPU profile over the
// same time, for its samples), reading at most MaxTrace bytes of it, and
// waits for it at most window and 30 s. cpuErr says why no CPU profile
// ran (the trace is read all the same).
func fetchTrace(ctx context.Context, u *url.URL, window time.Duration) (b []byte, cpuErr, err error) {
	ctx, cancel := context.WithTimeout(ctx, window+30*time.Second)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true, ResponseHeaderTimeout: window + 20*time.Second}}
	defer c.CloseIdleConnections()
	// The CPU profile first, for a whole number of seconds past the
	// window; ended (its request cancelled) once the trace is in.
	cpuCtx, stopCPU := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := *u
		p.Path += "profile"
		p.RawQuery = "seconds=" + strconv.Itoa(int(window.Seconds())+2)
		resp, err := get(cpuCtx, c, p.String())
		if err != nil {
			if cpuCtx.Err() == nil {
				cpuErr = fmt.Errorf("watch: no CPU samples in the trace (%v): a goroutine on a CPU is named by where it stopped", err)
			}
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxTrace))
		resp.Body.Close()
	}()
	time.Sleep(100 * time.Millisecond) // the profile started first: its samples cover the trace
	t := *u
	t.Path += "trace"
	t.RawQuery = "seconds=" + strconv.FormatFloat(window.Seconds(), 'f', -1, 64)
	b, err = readAll(ctx, c, t.String())
	stopCPU()
	wg.Wait()
	return b, cpuErr, err
}

// readAll GETs a trace, at most MaxTrace bytes of it.
func readAll(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	resp, err := get(ctx, c, u)
	if err != nil {
		return nil, fmt.Errorf("watch: no Go execution trace: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxTrace+1))
	switch {
	case len(b) > MaxTrace:
		return b[:MaxTrace], fmt.Errorf("watch: the Go execution trace passed %d MiB: read up to there; a shorter window", MaxTrace>>20)
	case err != nil:
		return b, fmt.Errorf("watch: the Go execution trace was cut after %d bytes: %v", len(b), err)
	}
	return b, nil
}

// get GETs u and answers its response when it is 200, else why not in one
// line (the status and the first line of its body).
func get(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v: is net/http/pprof served there (import _ \"net/http/pprof\")?", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s answered %s: %s", u, resp.Status, cut(strings.TrimSpace(line)))
	}
	return resp, nil
}

// goTrace is what the kit read of a trace.
type goTrace struct {
	threshold   time.Duration
	first, last trace.Time
	stacks      map[trace.Stack]*stackInfo
	gs          map[trace.GoID]*goroutine
	holds       map[holdAt]*heldThere
	samples     int // CPU samples kept
	dropped     int // holds past maxHolds
	noSamples   bool
}

// goroutine is one goroutine followed through the trace.
type goroutine struct {
	name   string // "goroutine 42"
	state  trace.GoState
	since  trace.Time
	stack  *stackInfo // where it entered its state (a block's, a system call's)
	reason string
	role   string
	// samples are its CPU samples not yet given to a stretch on a CPU.
	samples []goSample
}

type goSample struct {
	at    trace.Time
	stack *stackInfo
}

// readTrace reads a Go execution trace, following every goroutine: each
// stretch in a system call, a block (a sleep, a channel, a lock, the
// network) or on a CPU past threshold is a hold, by goroutine and stack.
// A trace of a Go newer than the reader knows is said, not guessed.
func readTrace(in io.Reader, threshold time.Duration) (*goTrace, error) {
	br := bufio.NewReader(in)
	head, _ := br.Peek(16)
	var v int
	if _, err := fmt.Sscanf(string(head), "go 1.%d trace", &v); err != nil {
		return nil, errors.New("watch: what pprof answered is not a Go execution trace")
	}
	if v > newestTrace {
		return nil, fmt.Errorf("watch: a Go 1.%d execution trace: this kit's reader (golang.org/x/exp/trace) reads up to Go 1.%d; a kit built with a newer golang.org/x/exp reads it", v, newestTrace)
	}
	r, err := trace.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("watch: the Go 1.%d execution trace is not read: %v", v, err)
	}
	g := &goTrace{threshold: threshold, first: -1, stacks: map[trace.Stack]*stackInfo{}, gs: map[trace.GoID]*goroutine{}, holds: map[holdAt]*heldThere{}, noSamples: true}
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			g.end()
			return g, fmt.Errorf("watch: the Go execution trace read up to %s, then: %v", culprit.FormatHeld(g.last.Sub(max(g.first, 0))), err)
		}
		now := ev.Time()
		if g.first < 0 {
			g.first = now
		}
		g.last = max(g.last, now)
		switch ev.Kind() {
		case trace.EventStackSample:
			g.sample(ev)
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind == trace.ResourceGoroutine {
				g.transition(now, st)
			}
		}
	}
	g.end()
	return g, nil
}

// stack is what a hold needs of a trace's stack, decided once a stack.
func (g *goTrace) stack(s trace.Stack) *stackInfo {
	if s == trace.NoStack {
		return nil
	}
	if si, ok := g.stacks[s]; ok {
		return si
	}
	var frames []culprit.Frame
	for f := range s.Frames() {
		if len(frames) == jfrStackDepth {
			break
		}
		frames = append(frames, culprit.Frame{Function: cut(f.Func), File: cut(f.File), Line: int(min(f.Line, 1<<30))})
	}
	i := culpritAt(frames, goIsRuntime, goIsServer)
	own := len(frames) > 0 && !goIsRuntime(frames[i].Function) && !goIsServer(frames[i].Function)
	si := &stackInfo{frames: frames[min(i, len(frames)):min(i+holdFrames, len(frames))], idle: !own, role: goRole(frames)}
	si.call = goCall(frames)
	if len(g.stacks) < maxStacks {
		g.stacks[s] = si
	}
	return si
}

// goCall names the call a stack is in: a system call by its syscall
// frame ("read" of syscall.read), a wait in the network poller by the
// descriptor's operation ("read" of internal/poll.(*FD).Read); "" for
// neither.
func goCall(frames []culprit.Frame) string {
	for _, f := range frames {
		if op, ok := strings.CutPrefix(f.Function, "internal/poll.(*FD)."); ok {
			switch op {
			case "Read", "Write", "Accept", "ReadFrom", "WriteTo", "ReadMsg", "WriteMsg":
				return strings.ToLower(op)
			}
		}
		if f.Function == "net.(*netFD).connect" {
			return "connect"
		}
		pkg := goPackage(f.Function)
		if pkg == "syscall" || pkg == "golang.org/x/sys/unix" || pkg == "internal/syscall/unix" {
			name := f.Function[len(pkg)+1:]
			if name != "" && name[0] >= 'a' && name[0] <= 'z' || strings.HasPrefix(name, "Epoll") {
				return strings.ToLower(strings.TrimPrefix(name, "Raw"))
			}
		}
	}
	return ""
}

func (g *goTrace) goroutine(id trace.GoID) *goroutine {
	gr := g.gs[id]
	if gr == nil && len(g.gs) < maxGoroutines {
		gr = &goroutine{name: "goroutine " + strconv.FormatInt(int64(id), 10), role: roleGoOther}
		g.gs[id] = gr
	}
	return gr
}

// sample keeps a CPU sample for its goroutine's stretch on a CPU.
func (g *goTrace) sample(ev trace.Event) {
	g.noSamples = false
	gr := g.gs[ev.Goroutine()]
	if gr == nil || g.samples >= maxSamples {
		return
	}
	si := g.stack(ev.Stack())
	if si == nil {
		return
	}
	g.learn(gr, si)
	gr.samples = append(gr.samples, goSample{at: ev.Time(), stack: si})
	g.samples++
}

// learn gives the goroutine the role its stack says.
func (g *goTrace) learn(gr *goroutine, si *stackInfo) {
	if si != nil && si.role != roleGoOther {
		gr.role = si.role
	}
}

// transition follows one goroutine's change of state: the stretch it
// ends is a hold when it is a block, a system call or a CPU's, past the
// threshold, in the application's frames.
func (g *goTrace) transition(now trace.Time, st trace.StateTransition) {
	from, to := st.Goroutine()
	gr := g.goroutine(st.Resource.Goroutine())
	if gr == nil {
		return
	}
	si := g.stack(st.Stack)
	g.learn(gr, si)
	if from == to { // a generation's restatement: nothing changed
		if gr.stack == nil {
			gr.stack = si
		}
		return
	}
	if from != trace.GoUndetermined && gr.state == from {
		g.stretch(gr, now, si)
	}
	gr.state, gr.since, gr.reason, gr.stack = to, now, st.Reason, si
	if to == trace.GoNotExist {
		gr.samples = nil
	}
}

// stretch counts the goroutine's stretch in its state, ending now, when
// it is a hold; end is the stack the goroutine stopped at (a stretch on a
// CPU is named by its CPU samples, else by where it stopped).
func (g *goTrace) stretch(gr *goroutine, now trace.Time, end *stackInfo) {
	d := time.Duration(now - gr.since)
	at := gr.stack
	var state string
	switch gr.state {
	case trace.GoWaiting:
		state = goWait(gr.reason, at)
	case trace.GoSyscall:
		state = "in a system call"
		if at != nil && at.call != "" {
			state += " (" + at.call + ")"
		}
	case trace.GoRunning:
		state, at = "on a CPU", g.onCPU(gr, now, end)
	default:
		return // runnable: waiting for a CPU, not held by a call
	}
	if d < g.threshold || at == nil || at.idle || state == "" {
		return
	}
	g.hold(gr, state, at, int64(d))
}

// onCPU is the stack a stretch on a CPU ending now is named by: the
// application's frame most of its CPU samples were in, else where it
// stopped when that is the application's; its samples are used up.
func (g *goTrace) onCPU(gr *goroutine, now trace.Time, end *stackInfo) *stackInfo {
	count := map[*stackInfo]int{}
	var best *stackInfo
	n := 0
	for _, s := range gr.samples {
		if s.at > now {
			break
		}
		n++
		if s.at < gr.since || s.stack.idle {
			continue
		}
		count[s.stack]++
		if best == nil || count[s.stack] > count[best] {
			best = s.stack
		}
	}
	gr.samples = gr.samples[n:]
	if best != nil {
		return best
	}
	return end
}

// goWait words a block by its reason (the runtime's), or "" for a wait
// that is the runtime's own.
func goWait(reason string, at *stackInfo) string {
	switch reason {
	case "network":
		if at != nil && at.call != "" {
			return "in a network " + at.call
		}
		return "in a network wait"
	case "sleep":
		return "in a sleep"
	case "chan receive":
		return "in a channel receive"
	case "chan send":
		return "in a channel send"
	case "select":
		return "in a select"
	case "sync":
		return "blocked on a lock"
	case "sync.(*Cond).Wait":
		return "in a sync.Cond wait"
	case "forever", "unspecified":
		return "blocked"
	}
	return ""
}

// hold counts d ns of a hold of the goroutine in state at stack at.
func (g *goTrace) hold(gr *goroutine, state string, at *stackInfo, d int64) {
	k := holdAt{thread: gr.name, state: state, stack: at}
	h := g.holds[k]
	if h == nil {
		if len(g.holds) >= maxHolds {
			g.dropped++
			return
		}
		h = &heldThere{}
		g.holds[k] = h
	}
	h.ns += d
	h.calls++
	h.longest = max(h.longest, d)
}

// end counts the stretches the trace ended in (a call still going).
func (g *goTrace) end() {
	for _, gr := range g.gs {
		if gr.state != trace.GoUndetermined && gr.state != trace.GoNotExist {
			g.stretch(gr, g.last, nil)
		}
	}
}

// judge fills s from the trace: the serving goroutines' holds by place,
// in the role most held (event loops, a goroutine a request, or, where no
// serving goroutine is known, any goroutine in the application's frames).
func (g *goTrace) judge(s *culprit.Service) {
	roles := map[string]string{}
	count := map[string]int{}
	for _, gr := range g.gs {
		roles[gr.name] = gr.role
		count[gr.role]++
	}
	tallies := map[string]*tally{}
	full := false
	for k, h := range g.holds {
		role := roles[k.thread]
		t := tallies[role]
		if t == nil {
			t = newTally()
			tallies[role] = t
		}
		if !t.add(k.thread, k.state, k.peer, k.stack.frames, false, h.ns, h.calls, h.longest) {
			full = true
		}
	}
	role := servingRole(tallies, []string{roleGoLoop, roleGoRequest}, func(c string) bool { return count[c] > 0 })
	if role == "" {
		role = roleGoOther
		s.Limits = append(s.Limits, "watch: no goroutine that serves connections recognised (gnet's, evio's or nbio's loops, net/http's or fasthttp's): every goroutine held in the application's frames is named")
	}
	s.Role, s.Pool = role, role == roleGoRequest
	if t := tallies[role]; t != nil {
		s.Holds = t.holds()
	}
	if role != roleGoOther {
		s.Serving = count[role]
	}
	if g.dropped > 0 {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d distinct holds in the trace: the first counted", maxHolds))
	}
	if full {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d places held: the first counted", MaxPlaces))
	}
}
