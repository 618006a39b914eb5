package outside

import (
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// JThread is one thread of a `jcmd Thread.print`.
type JThread struct {
	Name string
	TID  int // its native id (nid), the thread's id in /proc
	// State is the Java state line's words: "TIMED_WAITING (sleeping)",
	// "BLOCKED (on object monitor)", "RUNNABLE"; empty for a VM thread.
	State  string
	Frames []JFrame
}

// JFrame is one Java frame.
type JFrame struct {
	culprit.Frame
	JDK bool // a frame of the JDK itself (java.*, jdk.*, sun.*)
}

// MaxJThreads caps the threads Parse keeps; MaxJFrames each one's frames.
const (
	MaxJThreads = 4096
	MaxJFrames  = 64
)

// Parse reads a `jcmd PID Thread.print` (the jstack format): each thread's
// whole name, native id, state and frames. Lines it does not know are
// skipped; nothing in them is trusted.
func Parse(dump string) []JThread {
	var out []JThread
	var cur *JThread
	for _, line := range strings.Split(dump, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, `"`):
			if len(out) == MaxJThreads {
				return out
			}
			name, rest, ok := threadHead(line)
			if !ok {
				cur = nil
				continue
			}
			out = append(out, JThread{Name: cut(name, maxText), TID: nid(rest)})
			cur = &out[len(out)-1]
		case cur == nil:
		case strings.HasPrefix(strings.TrimSpace(line), "java.lang.Thread.State: "):
			cur.State = cut(strings.TrimPrefix(strings.TrimSpace(line), "java.lang.Thread.State: "), 64)
		case strings.HasPrefix(line, "\tat "):
			if len(cur.Frames) < MaxJFrames {
				cur.Frames = append(cur.Frames, frame(strings.TrimPrefix(line, "\tat ")))
			}
		case line == "":
			cur = nil
		}
	}
	return out
}

// threadHead splits a thread's first line into its name (between the
// first quote and the quote that ends it, before " #N", " daemon",
// " prio=" or " os_prio=") and the rest.
func threadHead(line string) (name, rest string, ok bool) {
	for i := len(line) - 1; i > 0; i-- {
		if line[i] != '"' {
			continue
		}
		after := line[i+1:]
		for _, p := range []string{" #", " daemon", " prio=", " os_prio=", ""} {
			if p == "" && strings.TrimSpace(after) != "" {
				continue
			}
			if strings.HasPrefix(after, p) {
				return line[1:i], after, true
			}
		}
	}
	return "", "", false
}

// nid is the thread's native id from " nid=0x6dfe ".
func nid(rest string) int {
	i := strings.LastIndex(rest, " nid=0x")
	if i < 0 {
		return 0
	}
	h := rest[i+len(" nid=0x"):]
	if j := strings.IndexByte(h, ' '); j >= 0 {
		h = h[:j]
	}
	n, err := strconv.ParseUint(h, 16, 31)
	if err != nil {
		return 0
	}
	return int(n)
}

// frame reads "bystander.Protocol.block(Protocol.java:36)" or
// "java.lang.Thread.sleep(java.base@17.0.15/Native Method)".
func frame(s string) JFrame {
	fn, loc, _ := strings.Cut(s, "(")
	loc = strings.TrimSuffix(loc, ")")
	module := ""
	if i := strings.IndexByte(loc, '/'); i >= 0 {
		module, loc = loc[:i], loc[i+1:]
	}
	f := JFrame{Frame: culprit.Frame{Function: cut(fn, maxText)}}
	file, line, ok := strings.Cut(loc, ":")
	if n, err := strconv.Atoi(line); ok && err == nil && n >= 0 {
		f.File, f.Line = cut(file, maxText), n
	} else {
		f.File = cut(loc, maxText)
	}
	mod, _, _ := strings.Cut(module, "@")
	f.JDK = strings.HasPrefix(mod, "java.") || strings.HasPrefix(mod, "jdk.")
	for _, p := range []string{"java.", "javax.", "jdk.", "sun.", "com.sun."} {
		f.JDK = f.JDK || strings.HasPrefix(fn, p)
	}
	return f
}

// Call is the thread's innermost frame, as a reader names it:
// "Thread.sleep", "Object.wait", "SocketDispatcher.read0".
func (t JThread) Call() string {
	if len(t.Frames) == 0 {
		return ""
	}
	fn := t.Frames[0].Function
	parts := strings.Split(fn, ".")
	if len(parts) >= 2 {
		return parts[len(parts)-2] + "." + parts[len(parts)-1]
	}
	return fn
}

// Own are its frames from the first that is not the JDK's, up: where the
// application (or its framework) made the call.
func (t JThread) Own() []culprit.Frame {
	for i, f := range t.Frames {
		if !f.JDK {
			out := make([]culprit.Frame, 0, len(t.Frames)-i)
			for _, g := range t.Frames[i:] {
				out = append(out, g.Frame)
			}
			return out
		}
	}
	return nil
}
