package watch

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// by JfrDigest under caps (compiled once a JDK, kept in the kit's cache).
// A JVM that refuses attach, whose Flight Recorder is disabled, or of
// another user (the kit not root) gives a Service with no window and the
// reason.
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
	if err := dir.write("bystander.jfc", JFC(o.Threshold)); err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
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
	// The digest compiled once (jfr_class.go), after the window: a compile
	// takes a core for a second.
	prog := compiledDigest(context.WithoutCancel(ctx), java)
	s.CostNs += prog.cpu
	if prog.note != "" {
		s.Limits = append(s.Limits, prog.note)
	}
	if err := dir.write(prog.file, prog.data); err != nil {
		s.Limits = append(s.Limits, err.Error())
		return s
	}
	r, cpu, err := digest(context.WithoutCancel(ctx), java, prog.args(dir.host), rec, dir.uid, dir.gid, from, to)
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
