package watch

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// The recording read: JfrDigest.java's stream of stacks, events and
// thread dumps, kept under caps as holds by thread, call and stack.

// JfrDigest.java reads a recording for the kit: each stack once, then the
// events by their stack's number (jfr print --json spent 40 kB an event of
// Tomcat's on its class loaders and modules).
//
//go:embed JfrDigest.java
var jfrDigest []byte

// maxPrint is MaxPrint, lowered by the tests.
var maxPrint int64 = MaxPrint

// stackInfo is what a hold needs of its stack, decided once a stack:
// whether it is a wait for work, the role its frames say, and the culprit
// frame with a few of its callers.
type stackInfo struct {
	frames []culprit.Frame
	idle   bool
	role   string
	call   string // a Go stack's call: "read" (a system call's, or the network poller's)
}

// holdAt is a thread held in one call at one stack; heldThere how long
// within the window, how often, the longest.
type holdAt struct {
	thread, state, peer string
	stack               *stackInfo
}

type heldThere struct {
	ns, longest int64
	calls       int
}

// recording is what the kit read of a recording, over the window from..to
// (unix ns).
type recording struct {
	from, to int64
	stacks   map[int]*stackInfo
	holds    map[holdAt]*heldThere
	// threads are those any event was on, idle or not, with the role
	// their frames say.
	threads map[string]string
	dumps   []string // the thread dumps, the last two
	// events counts the events read; cut says the digest was cut at
	// maxPrint; dropped counts holds past maxHolds.
	events  int
	cut     bool
	dropped int
	names   map[string]string
}

// Caps on what a recording keeps: its stacks, its distinct holds (a
// thread in one call at one stack), the threads, the distinct strings.
const (
	maxStacks  = 100_000
	maxHolds   = 200_000
	maxThreads = 100_000
	holdFrames = 8
	maxNames   = 100_000
)

// digestItem is one object of JfrDigest's stream: a stack (Frames), an
// event (Event) or a thread dump (Dump).
type digestItem struct {
	Stack  int `json:"stack"`
	Frames []struct {
		C string `json:"c"`
		M string `json:"m"`
		L int    `json:"l"`
	} `json:"frames"`
	Event  string  `json:"event"`
	Start  int64   `json:"start"`
	Dur    int64   `json:"dur"`
	Thread string  `json:"thread"`
	TID    int64   `json:"tid"`
	Peer   string  `json:"peer"`
	What   string  `json:"what"`
	Dump   *string `json:"dump"`
}

// digest runs JfrDigest (prog: java's arguments that name it, a jar's
// class or the source) over the recording with the JDK's java (beside its
// jfr), as uid:gid when asked (another user's JVM), reading at most
// maxPrint bytes, for at most jfrLimit; it returns what it read over the
// window from..to, and the digest's CPU.
func digest(ctx context.Context, java string, prog []string, path string, uid, gid uint32, from, to time.Time) (*recording, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, jfrLimit)
	defer cancel()
	args := append(append(append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-Xss1m"}, prog...), path), jfrEvents...)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 && uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 500 * time.Millisecond
	var errOut bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &errOut, max: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, fmt.Errorf("watch: the recording's digest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("watch: the recording's digest did not start: %v", err)
	}
	r, readErr := readDigest(out, from, to)
	if readErr != nil || r.cut {
		cancel() // what is left is not read: the digest must not wait to write it
	}
	waitErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left
	var cpu int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	switch {
	case r.cut:
		return r, cpu, fmt.Errorf("watch: the recording's digest was read up to %d MiB (%d events): the holds are those of its start; a shorter window, or a higher threshold", maxPrint>>20, r.events)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return r, cpu, fmt.Errorf("watch: the recording's digest did not finish within %s (%d events read): a machine too busy, or a recording too large", jfrLimit, r.events)
	case readErr != nil:
		return r, cpu, fmt.Errorf("watch: the recording's digest unreadable after %d events (%v): %s", r.events, readErr, outside.Reason(errOut.String()))
	case waitErr != nil:
		return r, cpu, fmt.Errorf("watch: the recording's digest failed (%v): %s", waitErr, outside.Reason(errOut.String()))
	}
	return r, cpu, nil
}

// readDigest reads JfrDigest's stream, at most maxPrint bytes (and one
// more to tell a stream cut at an item's end), counting the holds within
// from..to.
func readDigest(in io.Reader, from, to time.Time) (*recording, error) {
	lim := &io.LimitedReader{R: in, N: maxPrint}
	dec := json.NewDecoder(lim)
	r := &recording{from: from.UnixNano(), to: to.UnixNano(), stacks: map[int]*stackInfo{}, holds: map[holdAt]*heldThere{}, threads: map[string]string{}}
	for {
		var it digestItem
		err := dec.Decode(&it)
		switch {
		case errors.Is(err, io.EOF):
			// At the cap the digest may go on past an item's end: it was
			// read whole only if nothing follows.
			r.cut = lim.N <= 0 && more(in)
			return r, nil
		case err != nil && lim.N <= 0:
			r.cut = true
			return r, nil
		case err != nil:
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &typ) {
				return r, err
			}
			continue // read whole, a field of another type: skipped
		}
		r.add(it)
	}
}

// more says whether in has a byte left.
func more(in io.Reader) bool {
	var b [1]byte
	n, _ := io.ReadFull(in, b[:])
	return n > 0
}

// add keeps what the item says.
func (r *recording) add(it digestItem) {
	switch {
	case it.Frames != nil:
		if it.Stack <= 0 || len(r.stacks) >= maxStacks {
			return
		}
		var frames []culprit.Frame
		for _, f := range it.Frames {
			if len(frames) == jfrStackDepth {
				break
			}
			frames = append(frames, culprit.Frame{Function: r.intern(f.C + "." + f.M), Line: max(f.L, 0)})
		}
		i := culpritAt(frames, javaIsRuntime, javaIsServer)
		r.stacks[it.Stack] = &stackInfo{frames: frames[min(i, len(frames)):min(i+holdFrames, len(frames))],
			idle: javaIdleWait(frames), role: javaRole("", frames)}
	case it.Dump != nil:
		dump := *it.Dump
		if len(dump) > outside.MaxDump {
			dump = dump[:outside.MaxDump]
		}
		r.dumps = append(r.dumps, dump)
		if len(r.dumps) > 2 {
			r.dumps = r.dumps[len(r.dumps)-2:]
		}
	case it.Event != "":
		r.events++
		r.event(it)
	}
}

// event counts one event past the threshold: a hold, unless a wait for
// work, clipped to the window.
func (r *recording) event(it digestItem) {
	thread := it.Thread
	if thread == "" {
		thread = fmt.Sprintf("tid %d", it.TID)
	}
	thread = r.intern(thread)
	st := r.stacks[it.Stack]
	if st == nil {
		st = &stackInfo{role: roleOther}
	}
	if role, ok := r.threads[thread]; ok && role != roleOther || !ok && len(r.threads) < maxThreads {
		if !ok || st.role != roleOther {
			r.threads[thread] = st.role
		}
	}
	if st.idle || it.Dur < 0 {
		return
	}
	b, e := max(it.Start, r.from), min(it.Start+it.Dur, r.to)
	if e <= b {
		return
	}
	var state, peer string
	switch it.Event {
	case "jdk.SocketRead":
		state, peer = "in a socket read", it.Peer
	case "jdk.SocketWrite":
		state, peer = "in a socket write", it.Peer
	case "jdk.ThreadSleep":
		state = "in a sleep"
	case "jdk.JavaMonitorEnter":
		state = "blocked on a monitor" + simpleClass(" of ", it.What)
	case "jdk.JavaMonitorWait":
		state = "in Object.wait" + simpleClass(" on ", it.What)
	case "jdk.ThreadPark":
		state = "parked" + simpleClass(" on ", it.What)
	case "jdk.FileRead":
		state = "in a file read of " + it.What
	case "jdk.FileWrite":
		state = "in a file write to " + it.What
	default:
		return
	}
	k := holdAt{thread: thread, state: r.intern(state), peer: r.intern(peer), stack: st}
	h := r.holds[k]
	if h == nil {
		if len(r.holds) >= maxHolds {
			r.dropped++
			return
		}
		h = &heldThere{}
		r.holds[k] = h
	}
	h.ns += e - b
	h.calls++
	h.longest = max(h.longest, e-b)
}

// intern keeps one copy of each string (a recording repeats a few
// thousand), cut at culprit.MaxText, at most maxNames.
func (r *recording) intern(s string) string {
	s = cut(s)
	if v, ok := r.names[s]; ok {
		return v
	}
	if r.names == nil {
		r.names = map[string]string{}
	}
	if len(r.names) < maxNames {
		r.names[s] = s
	}
	return s
}

// simpleClass is sep and a class's simple name: " on ConditionObject".
func simpleClass(sep, class string) string {
	if class == "" {
		return ""
	}
	return sep + class[strings.LastIndexAny(class, ".$")+1:]
}

func cut(s string) string {
	if len(s) > culprit.MaxText {
		s = strings.ToValidUTF8(s[:culprit.MaxText], "")
	}
	return s
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
