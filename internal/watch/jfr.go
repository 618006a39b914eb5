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
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// jfrEvents are the events the kit asks Flight Recorder for, each past the
// threshold with its stack: where a thread waits in a call.
var jfrEvents = []string{"jdk.SocketRead", "jdk.SocketWrite", "jdk.ThreadSleep", "jdk.JavaMonitorEnter",
	"jdk.JavaMonitorWait", "jdk.ThreadPark", "jdk.FileRead", "jdk.FileWrite"}

// JFC is the recording's settings, as a .jfc file any JDK with Flight
// Recorder reads (8u262 and later): the events above past threshold, with
// their stacks, and every thread's stack (jdk.ThreadDump) at the
// recording's start and end, for the threads' roles and the frames' files.
func JFC(threshold time.Duration) []byte {
	th := fmt.Sprintf("%d us", max(threshold.Microseconds(), 1))
	if threshold%time.Millisecond == 0 {
		th = fmt.Sprintf("%d ms", threshold.Milliseconds())
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<configuration version="2.0" label="bystander" description="bystander: where serving threads wait in a call past ` + th + `">` + "\n")
	for _, e := range jfrEvents {
		fmt.Fprintf(&b, `  <event name="%s"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">%s</setting></event>`+"\n", e, th)
	}
	b.WriteString(`  <event name="jdk.ThreadDump"><setting name="enabled">true</setting><setting name="period">everyChunk</setting></event>` + "\n")
	b.WriteString("</configuration>\n")
	return b.Bytes()
}

// Caps and bounds on the JVM's side of watching.
const (
	jcmdLimit = 20 * time.Second // JFR.start (the first one starts Flight Recorder in the JVM) and JFR.stop
	jfrLimit  = 60 * time.Second // the recording's digest
	// MaxRecording is the largest recording read; MaxPrint the most of its
	// digest read (about 150 bytes an event, each stack once).
	MaxRecording = 256 << 20
	MaxPrint     = 128 << 20
	// MaxPlaces caps the distinct places a recording's (or a trace's)
	// holds are counted in.
	MaxPlaces = 4096
	// jfrStackDepth is how many frames of a stack are read: Flight
	// Recorder's default depth.
	jfrStackDepth = 64
)

// JFR watches JVM pid through Flight Recorder for o.Window: `jcmd PID
// JFR.start` with the kit's settings, JFR.stop into a file, the file read
// by JfrDigest.java under caps. A JVM that refuses attach, whose Flight
// Recorder is disabled, or of another user (the kit not root) gives a
// Service with no window and the reason.
func JFR(ctx context.Context, pid int, o Options) culprit.Service {
	o = o.withDefaults()
	s := culprit.Service{Source: culprit.SourceJFR, ThresholdNs: int64(o.Threshold)}
	java, err := jdkJava()
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
	}
	if l := otherUser(pid, os.Geteuid()); l != "" {
		s.Limits = append(s.Limits, l)
		return s
	}
	dir, err := newRecordingDir(pid)
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
	}
	defer dir.remove()
	for name, b := range map[string][]byte{"bystander.jfc": JFC(o.Threshold), "JfrDigest.java": jfrDigest} {
		if err := dir.write(name, b); err != nil {
			s.Limits = append(s.Limits, err.Error())
			return s
		}
	}
	name := fmt.Sprintf("bystander-%d-%d", os.Getpid(), time.Now().UnixNano())
	// duration= ends the recording by itself should the kit end first.
	start := outside.Jcmd(ctx, pid, jcmdLimit, 64<<10, "JFR.start", "name="+name, "settings="+dir.inJVM("bystander.jfc"),
		fmt.Sprintf("duration=%ds", int((o.Window+time.Minute).Seconds())), "maxsize=256m")
	s.CostNs += start.CPUNs
	switch {
	case start.Err != "":
		s.Limits = append(s.Limits, "watch: Flight Recorder not started: "+start.Err)
		return s
	case !strings.Contains(start.Out, "Started recording"):
		s.Limits = append(s.Limits, fmt.Sprintf("watch: Flight Recorder did not start in pid %d: %s", pid, outside.Reason(start.Out)))
		return s
	}
	// The recording's events before the window's beginning are left out
	// (the digest reads from..to only).
	from := o.begin(time.Now())
	sleepCtx(ctx, o.left())
	to := time.Now()
	stop := outside.Jcmd(context.WithoutCancel(ctx), pid, jcmdLimit, 64<<10, "JFR.stop", "name="+name, "filename="+dir.inJVM("recording.jfr"))
	s.CostNs += stop.CPUNs
	switch {
	case stop.Err != "":
		s.Limits = append(s.Limits, "watch: Flight Recorder's recording not written: "+stop.Err)
		return s
	case !strings.Contains(stop.Out, "Stopped recording"):
		s.Limits = append(s.Limits, fmt.Sprintf("watch: Flight Recorder's recording not written by pid %d: %s", pid, outside.Reason(stop.Out)))
		return s
	}
	if ctx.Err() != nil {
		s.Limits = append(s.Limits, "watch: cut short: Flight Recorder watched "+culprit.FormatHeld(to.Sub(from)))
	}
	rec, err := dir.recording("recording.jfr")
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
	}
	r, cpu, err := digest(context.WithoutCancel(ctx), java, filepath.Join(dir.host, "JfrDigest.java"), rec, dir.uid, dir.gid, from, to)
	s.CostNs += cpu
	if err != nil {
		s.Limits = append(s.Limits, err.Error())
		if r == nil {
			return s
		}
	}
	s.WindowNs = int64(to.Sub(from))
	r.judge(&s)
	return s
}

// jdkJava is the java of the JDK whose jfr is on the PATH: it runs the
// digest (a single source file, with the JDK's jdk.jfr module).
func jdkJava() (string, error) {
	const install = "it comes with the JDK: apt-get install -y openjdk-17-jdk-headless"
	jfr, err := exec.LookPath("jfr")
	if err != nil {
		return "", fmt.Errorf("watch: jfr is not installed (%s): no Flight Recorder", install)
	}
	if real, err := filepath.EvalSymlinks(jfr); err == nil {
		jfr = real
	}
	java := filepath.Join(filepath.Dir(jfr), "java")
	if _, err := os.Stat(java); err != nil {
		return "", fmt.Errorf("watch: no java beside %s (%s): no Flight Recorder", jfr, install)
	}
	return java, nil
}

// otherUser says, for a kit running as euid, that process pid is another
// user's and cannot be attached to ("" when it can: the kit's own, or
// the kit is root, whose jcmd attaches as the JVM's user).
func otherUser(pid, euid int) string {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil || euid == 0 || int(st.Uid) == euid {
		return ""
	}
	return fmt.Sprintf("watch: pid %d is another user's (uid %d): Flight Recorder needs the kit run as that user, or as root", pid, st.Uid)
}

// recordingDir is where the JVM reads the settings and writes the
// recording: a directory of the kit's, owned by the JVM's user, seen by
// the kit at host and by the JVM at jvm (in its own mount namespace: a
// container's /tmp).
type recordingDir struct {
	host, jvm string
	uid, gid  uint32 // the JVM's user: the digest runs as it
}

func newRecordingDir(pid int) (*recordingDir, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return nil, fmt.Errorf("watch: pid %d: %v: the process ended, or this is a container without its /proc", pid, err)
	}
	base, jvmBase := os.TempDir(), os.TempDir()
	self, _ := os.Readlink("/proc/self/ns/mnt")
	if theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && theirs != self {
		if os.Geteuid() == 0 && st.Uid != 0 {
			// Through /proc/PID/root a link the container's user made
			// resolves against this machine's root: a directory made
			// there as root could land anywhere on the host.
			return nil, fmt.Errorf("watch: pid %d is in a container of another user's: the kit, as root, makes no directory in it (Flight Recorder not asked)", pid)
		}
		base, jvmBase = fmt.Sprintf("/proc/%d/root/tmp", pid), "/tmp" // a container: its own /tmp
	}
	host, err := os.MkdirTemp(base, "bystander-jfr-")
	if err != nil {
		return nil, fmt.Errorf("watch: no directory for Flight Recorder's recording: %v", err)
	}
	d := &recordingDir{host: host, jvm: filepath.Join(jvmBase, filepath.Base(host)), uid: st.Uid, gid: st.Gid}
	if os.Geteuid() == 0 && st.Uid != 0 {
		// The JVM writes the recording as its user, into a directory of
		// its own; the kit reads it as that user too (the digest).
		if err := os.Chown(host, int(st.Uid), int(st.Gid)); err != nil {
			os.RemoveAll(host)
			return nil, fmt.Errorf("watch: the recording's directory cannot be given to pid %d's user: %v", pid, err)
		}
	}
	return d, nil
}

func (d *recordingDir) inJVM(name string) string { return filepath.Join(d.jvm, name) }

// write makes a new file in the directory: never one already there, nor
// through a link (the directory is the JVM's user's, who could have put
// one there pointing anywhere the kit may write).
func (d *recordingDir) write(name string, b []byte) error {
	f, err := os.OpenFile(filepath.Join(d.host, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("watch: Flight Recorder's settings not written: %v", err)
	}
	return nil
}

// recording is the recording's path, once it is a regular file of at
// most MaxRecording bytes (the JVM's user could put anything there).
func (d *recordingDir) recording(name string) (string, error) {
	p := filepath.Join(d.host, name)
	st, err := os.Lstat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("watch: Flight Recorder's recording is missing: %v", err)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("watch: Flight Recorder's recording %s is not a regular file: not read", p)
	case st.Size() > MaxRecording:
		return "", fmt.Errorf("watch: Flight Recorder's recording is %d MiB, more than the %d MiB read: a shorter window, or a higher threshold", st.Size()>>20, MaxRecording>>20)
	}
	return p, nil
}

func (d *recordingDir) remove() { os.RemoveAll(d.host) }

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

// digest runs JfrDigest over the recording with the JDK's java (beside
// its jfr), as uid:gid when asked (another user's JVM), reading at most
// maxPrint bytes, for at most jfrLimit; it returns what it read over the
// window from..to, and the digest's CPU.
func digest(ctx context.Context, java, src, path string, uid, gid uint32, from, to time.Time) (*recording, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, jfrLimit)
	defer cancel()
	args := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-Xss1m", src, path}, jfrEvents...)
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

// readDigest reads JfrDigest's stream, at most maxPrint bytes, counting
// the holds within from..to.
func readDigest(in io.Reader, from, to time.Time) (*recording, error) {
	lim := &io.LimitedReader{R: in, N: maxPrint}
	dec := json.NewDecoder(lim)
	r := &recording{from: from.UnixNano(), to: to.UnixNano(), stacks: map[int]*stackInfo{}, holds: map[holdAt]*heldThere{}, threads: map[string]string{}}
	for {
		var it digestItem
		err := dec.Decode(&it)
		switch {
		case errors.Is(err, io.EOF):
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

// The Java frames that are the runtime's, and the servers' libraries'.
var (
	javaRuntime = []string{"java.", "javax.", "jdk.", "sun.", "com.sun.", "jakarta."}
	javaServers = []string{"io.netty.", "org.apache.tomcat.", "org.apache.catalina.", "org.apache.coyote.", "org.eclipse.jetty.",
		"io.undertow.", "org.xnio.", "org.jboss.threads.", "io.vertx.", "reactor.netty.", "io.helidon.", "org.glassfish.grizzly."}
	// javaIdle are where a serving thread waits for work: a pool's queue,
	// a loop's task queue.
	javaIdle = []string{"java.util.concurrent.ThreadPoolExecutor.getTask", "org.apache.tomcat.util.threads.ThreadPoolExecutor.getTask",
		"org.apache.tomcat.util.threads.TaskQueue.", "java.util.concurrent.ForkJoinPool.awaitWork",
		"io.netty.util.concurrent.SingleThreadEventExecutor.takeTask", "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
		"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
		"java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.", "org.jboss.threads.EnhancedQueueExecutor$ThreadBody.run"}
	// javaLoops and javaPools are frames, javaLoopNames and javaPoolNames
	// thread names, of the threads that serve connections: event loops
	// (Netty, Vert.x, XNIO's I/O threads) and pools (Tomcat's, Jetty's,
	// XNIO's task threads).
	javaLoops = []string{"io.netty.channel.nio.NioEventLoop.run", "io.netty.channel.epoll.EpollEventLoop.run",
		"io.netty.channel.kqueue.KQueueEventLoop.run", "io.netty.channel.SingleThreadIoEventLoop.run", "org.xnio.nio.WorkerThread.run"}
	javaPools = []string{"org.apache.tomcat.util.threads.ThreadPoolExecutor$Worker.run", "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run",
		"org.jboss.threads.EnhancedQueueExecutor$ThreadBody.run"}
	javaLoopNames = regexp.MustCompile(`^(nio|epoll|kqueue|ioUring|multiThreadIo)EventLoopGroup-\d+-\d+$|^vert\.x-eventloop-thread-\d+$|^XNIO-\d+ I/O-\d+$|^reactor-http-(nio|epoll)-\d+$`)
	javaPoolNames = regexp.MustCompile(`-exec-\d+$|^qtp\d+-\d+$|^XNIO-\d+ task-\d+$|^default task-\d+$`)
)

func javaIsRuntime(fn string) bool { return hasPrefix(fn, javaRuntime) }
func javaIsServer(fn string) bool  { return hasPrefix(fn, javaServers) }

// The roles.
const (
	roleLoop  = "event-loop threads"
	rolePool  = "request threads"
	roleOther = "threads"
)

// javaRole is a thread's role by its stack (a dump's, or an event's),
// else by its name.
func javaRole(name string, frames []culprit.Frame) string {
	for _, f := range frames {
		switch {
		case hasPrefix(f.Function, javaLoops):
			return roleLoop
		case hasPrefix(f.Function, javaPools):
			return rolePool
		}
	}
	switch {
	case javaLoopNames.MatchString(name):
		return roleLoop
	case javaPoolNames.MatchString(name):
		return rolePool
	}
	return roleOther
}

// javaIdleWait says the hold is a wait for work: a frame below the
// application's (or anywhere, without one) is a pool's or a loop's wait.
func javaIdleWait(frames []culprit.Frame) bool {
	for _, f := range frames {
		if !javaIsRuntime(f.Function) && !javaIsServer(f.Function) {
			return false // the application's call
		}
		if hasPrefix(f.Function, javaIdle) {
			return true
		}
	}
	return false
}

// judge fills s from the recording: the serving threads' holds that are
// not waits for work, by place, in the role most held (event loops, a
// pool's request threads, or, where no serving thread is known, any
// thread in the application's frames).
func (r *recording) judge(s *culprit.Service) {
	// The dumps: every thread's role and the frames' files.
	roles, files := map[string]string{}, map[string]string{}
	var last []outside.JThread
	for _, d := range r.dumps {
		last = outside.Parse(d)
		for _, jt := range last {
			var fs []culprit.Frame
			for _, f := range jt.Frames {
				fs = append(fs, f.Frame)
				if f.File != "" && f.Line > 0 {
					files[className(f.Function)] = f.File
				}
			}
			if role := javaRole(jt.Name, fs); role != roleOther || roles[jt.Name] == "" {
				roles[jt.Name] = role
			}
		}
	}
	roleOf := func(thread, byFrames string) string {
		if role, ok := roles[thread]; ok && role != roleOther {
			return role
		}
		if byFrames != roleOther && byFrames != "" {
			return byFrames
		}
		return javaRole(thread, nil)
	}
	tallies := map[string]*tally{}
	full := false
	for k, h := range r.holds {
		role := roleOf(k.thread, k.stack.role)
		t := tallies[role]
		if t == nil {
			t = newTally()
			tallies[role] = t
		}
		frames, inferred := k.stack.frames, false
		if len(frames) > 0 {
			frames = append([]culprit.Frame(nil), frames...)
			frames[0].File, inferred = javaFile(frames[0].Function, files)
		}
		if !t.add(k.thread, k.state, k.peer, frames, inferred, h.ns, h.calls, h.longest) {
			full = true
		}
	}
	seen := map[string]map[string]bool{} // role -> the threads any event was on
	for thread, byFrames := range r.threads {
		role := roleOf(thread, byFrames)
		if seen[role] == nil {
			seen[role] = map[string]bool{}
		}
		seen[role][thread] = true
	}
	// The role: the serving role held most; where no serving thread is
	// known, any thread in the application's frames.
	role := servingRole(tallies, []string{roleLoop, rolePool}, func(c string) bool { return len(seen[c]) > 0 || hasRole(roles, c) })
	if role == "" {
		role = roleOther
		s.Limits = append(s.Limits, "watch: no thread that serves connections recognised (Netty's, Tomcat's, Jetty's, Undertow's or Vert.x's, by their frames or names): every thread held in the application's frames is named")
	}
	s.Role, s.Pool = role, role == rolePool
	if t := tallies[role]; t != nil {
		s.Holds = t.holds()
	}
	// How many threads of the role: those in the held threads' families
	// (Netty's acceptor group is not its worker group), from the last
	// dump, else those the recording saw.
	fams := map[string]bool{}
	for _, h := range s.Holds {
		for _, n := range h.Threads {
			fams[outside.Family(n)] = true
		}
	}
	count := func(names map[string]bool) int {
		n := 0
		for name := range names {
			if len(fams) == 0 || fams[outside.Family(name)] {
				n++
			}
		}
		return n
	}
	inDump := map[string]bool{}
	for _, jt := range last {
		if roles[jt.Name] == role {
			inDump[jt.Name] = true
		}
	}
	if role != roleOther {
		s.Serving = count(inDump)
		if s.Serving == 0 {
			s.Serving = count(seen[role])
		}
	}
	if len(r.dumps) == 0 {
		s.Limits = append(s.Limits, "watch: Flight Recorder gave no thread dump (jdk.ThreadDump): serving threads known by name only, frames' files inferred")
	}
	if r.dropped > 0 {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d distinct holds in the recording: the first counted", maxHolds))
	}
	if full {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d places held: the first counted", MaxPlaces))
	}
}

func (t *tally) total() int64 {
	var n int64
	for _, p := range t.places {
		n += p.HeldNs
	}
	return n
}

func hasRole(roles map[string]string, role string) bool {
	for _, r := range roles {
		if r == role {
			return true
		}
	}
	return false
}

// className is a Java frame's class: "LedgerClient" of
// "LedgerClient.balance".
func className(fn string) string {
	if i := strings.LastIndexByte(fn, '.'); i > 0 {
		return fn[:i]
	}
	return fn
}

// javaFile is the frame's file: a dump's, else inferred from its class
// ("com.acme.Ledger$Client" in "Ledger.java"), which it says.
func javaFile(fn string, files map[string]string) (string, bool) {
	class := className(fn)
	if f, ok := files[class]; ok {
		return f, false
	}
	outer, _, _ := strings.Cut(class[strings.LastIndexByte(class, '.')+1:], "$")
	if outer == "" {
		return "", true
	}
	return outer + ".java", true
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
