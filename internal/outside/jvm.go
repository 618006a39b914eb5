package outside

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// IsJVM says whether process pid runs a HotSpot JVM: it maps libjvm.so,
// or, where its maps cannot be read (another user's), it is named java.
func IsJVM(pid int) bool {
	b, err := files.ReadCapped(fmt.Sprintf("/proc/%d/maps", pid), maxProcFile)
	if err != nil {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return string(comm) == "java\n"
	}
	return bytes.Contains(b, []byte("/libjvm.so"))
}

// DumpJVM runs `jcmd PID Thread.print` for at most limit, keeping at most
// MaxDump bytes of what it prints, and reads the JVM's safepoint counters
// before and after: the pause the dump cost. Run as root against another
// user's JVM, jcmd runs as that user (a JVM lets its own user attach).
func DumpJVM(ctx context.Context, pid int, limit time.Duration) *JVM {
	j := &JVM{StartNs: time.Now().UnixNano()}
	before, errB := safepoints(pid)
	r := Jcmd(ctx, pid, limit, MaxDump, "Thread.print")
	j.EndNs, j.CPUNs = time.Now().UnixNano(), r.CPUNs
	if r.Err != "" {
		j.Err, j.refused = r.Err+": no Java stacks", r.Refused
		return j
	}
	j.Dump = r.Out
	if after, errA := safepoints(pid); errB == nil && errA == nil && after.freq > 0 {
		ticks := (after.time + after.sync) - (before.time + before.sync)
		j.PauseNs = int64(float64(ticks) / float64(after.freq) * 1e9)
		j.Safepoints = after.count - before.count
		j.PauseKnown = j.PauseNs >= 0 && j.Safepoints >= 0
		j.PauseNs, j.Safepoints = max(j.PauseNs, 0), max(j.Safepoints, 0)
	}
	return j
}

// JcmdResult is what one jcmd command gave.
type JcmdResult struct {
	Out   string // what it printed, at most the bytes asked for
	CPUNs int64  // jcmd's own CPU
	// Err says in one line why it gave nothing usable: jcmd missing, no
	// answer within the limit, or a refusal (Refused: it answered, and not
	// with what was asked: a JVM that refuses attach, or not a JVM; asking
	// again will not help).
	Err     string
	Refused bool
}

// Jcmd runs `jcmd PID ARGS...` for at most limit, keeping at most keep
// bytes of what it prints. Run as root against another user's JVM, jcmd
// runs as that user (a JVM lets its own user attach); an attach file it
// leaves behind is removed.
func Jcmd(ctx context.Context, pid int, limit time.Duration, keep int, args ...string) JcmdResult {
	var r JcmdResult
	what := fmt.Sprintf("jcmd %d %s", pid, strings.Join(args, " "))
	if len(args) > 0 {
		what = fmt.Sprintf("jcmd %d %s", pid, args[0])
	}
	path, err := exec.LookPath("jcmd")
	if err != nil {
		r.Err = "jcmd is not installed (it comes with the JDK: apt-get install -y openjdk-17-jdk-headless)"
		return r
	}
	defer removeAttachFiles(attachFiles(pid))
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{strconv.Itoa(pid)}, args...)...)
	out := &capped{max: keep}
	cmd.Stdout, cmd.Stderr = out, out
	// jcmd in a process group of its own, ended whole at the limit: a
	// child it left holding its output kept the wait for that output
	// open (a stall step took 69 s against a 1.5 s limit); WaitDelay
	// bounds that wait whatever holds it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if uid, gid, ok := ownerOf(pid); ok && os.Geteuid() == 0 && uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	}
	killGroup := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel, cmd.WaitDelay = killGroup, jcmdWaitDelay
	err = cmd.Run()
	if cmd.Process != nil {
		// What jcmd left behind ends with it (a group's id is not given
		// to another process while one of the group lives).
		_ = killGroup()
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.CPUNs = ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	text := out.buf.String()
	switch {
	case ctx.Err() != nil:
		r.Err = fmt.Sprintf("%s did not answer within %s (a JVM that refuses attach, or a machine too busy)", what, limit)
	case err != nil:
		// It answered, and not with what was asked: a JVM that refuses
		// attach (jcmd's reason is the exception's line, after "PID:"),
		// or not a JVM. Asking again will not help.
		r.Err, r.Refused = fmt.Sprintf("%s failed (%v): %s", what, err, Reason(text)), true
	default:
		r.Out = text
	}
	return r
}

// jcmdWaitDelay is how long jcmd's output is waited for once jcmd has
// ended or its limit has passed.
const jcmdWaitDelay = 200 * time.Millisecond

// attachFiles are where jcmd asks process pid to start its attach
// listener (HotSpot's .attach_pid file, in the process's working
// directory, else its /tmp) and that are not there yet: a jcmd that gives
// up (a process that is not a JVM, or does not answer in time) leaves its
// file behind, in whatever directory the server was started from.
func attachFiles(pid int) []string {
	name := ".attach_pid" + nsPID(pid)
	var out []string
	for _, dir := range []string{fmt.Sprintf("/proc/%d/cwd", pid), fmt.Sprintf("/proc/%d/root/tmp", pid)} {
		d, err := filepath.EvalSymlinks(dir) // the directory itself: the process may end meanwhile
		if err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
			continue // someone else's attach in progress: not ours to remove
		}
		out = append(out, filepath.Join(d, name))
	}
	return out
}

// removeAttachFiles removes those of the files that are regular files now.
func removeAttachFiles(paths []string) {
	for _, p := range paths {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			os.Remove(p)
		}
	}
}

// nsPID is process pid's id in its own PID namespace (the last NSpid of
// its status), as the JVM names its files.
func nsPID(pid int) string {
	id := strconv.Itoa(pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
				id = f[len(f)-1]
			}
		}
	}
	return id
}

// Reason is the line of jcmd's output that says why it failed: the first
// but for the "PID:" it starts with and a Java stack's "at ..." lines, a
// Java exception named without its package.
func Reason(out string) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "at ") || strings.Trim(line, "0123456789") == ":" {
			continue
		}
		if loc := javaPackage.FindStringIndex(line); loc != nil && loc[1] < len(line) && line[loc[1]] >= 'A' && line[loc[1]] <= 'Z' {
			line = line[loc[1]:]
		}
		return cut(line, 200)
	}
	return "it said nothing"
}

// javaPackage is the package before a Java class's name at a line's start.
var javaPackage = regexp.MustCompile(`^([a-z_$][a-z0-9_$]*\.)+`)

// capped keeps the first max bytes written to it and takes the rest
// without keeping it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// ownerOf is the real uid and gid of process pid.
func ownerOf(pid int) (uint32, uint32, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

// spCounters are a JVM's safepoint counters, in its high-resolution ticks.
type spCounters struct{ time, sync, count, freq int64 }

// safepoints reads the JVM's safepoint counters from its performance data
// file (hsperfdata, which every HotSpot JVM keeps unless -XX:-UsePerfData),
// in the process's own /tmp.
func safepoints(pid int) (spCounters, error) {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/root/tmp/hsperfdata_*/%s", pid, nsPID(pid)))
	if len(files) != 1 {
		return spCounters{}, errors.New("outside: no hsperfdata file")
	}
	f, err := os.Open(files[0])
	if err != nil {
		return spCounters{}, err
	}
	defer f.Close()
	b := make([]byte, 1<<20)
	n, _ := f.Read(b)
	c, err := perfCounters(b[:n], "sun.rt.safepointTime", "sun.rt.safepointSyncTime", "sun.rt.safepoints", "sun.os.hrt.frequency")
	if err != nil {
		return spCounters{}, err
	}
	return spCounters{time: c[0], sync: c[1], count: c[2], freq: c[3]}, nil
}

// perfCounters reads the named long counters of a HotSpot performance
// data file (its prologue: magic 0xcafec0c0, byte order, versions,
// accessible, used, overflow, timestamp, entry offset, entry count; then
// entries of length, name offset, vector length, type, flags, units,
// variability, data offset).
func perfCounters(b []byte, names ...string) ([]int64, error) {
	if len(b) < 32 || binary.BigEndian.Uint32(b) != 0xcafec0c0 {
		return nil, errors.New("outside: not a JVM performance data file")
	}
	var bo binary.ByteOrder = binary.BigEndian
	if b[4] == 1 {
		bo = binary.LittleEndian
	}
	off, n := int(bo.Uint32(b[24:])), int(bo.Uint32(b[28:]))
	out := make([]int64, len(names))
	found := 0
	for i := 0; i < n && off >= 0 && off+20 <= len(b); i++ {
		length, nameOff, vec := int(bo.Uint32(b[off:])), int(bo.Uint32(b[off+4:])), int(bo.Uint32(b[off+8:]))
		typ, dataOff := b[off+12], int(bo.Uint32(b[off+16:]))
		if length <= 0 || off+length > len(b) {
			break
		}
		e := b[off : off+length]
		if nameOff < len(e) && vec == 0 && typ == 'J' && dataOff >= 0 && dataOff+8 <= len(e) {
			name, _, _ := bytes.Cut(e[nameOff:], []byte{0})
			for k, want := range names {
				if string(name) == want {
					out[k] = int64(bo.Uint64(e[dataOff:]))
					found++
				}
			}
		}
		off += length
	}
	if found < len(names) {
		return nil, errors.New("outside: safepoint counters not found")
	}
	return out, nil
}

// maxProcFile caps what is read of a process's larger /proc files (its
// TCP sockets, its memory maps): a server of a million connections must
// not make the kit read without end.
const maxProcFile = 16 << 20
