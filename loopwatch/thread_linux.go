package loopwatch

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

func gettid() int { return syscall.Gettid() }

// threadSample is what the kernel says of a loop's thread at one moment.
type threadSample struct {
	ran      time.Duration // on a CPU so far (its CPU clock: exact, also mid-run)
	delay    time.Duration // waited for a CPU so far (schedstat: counted when it next runs)
	runnable bool          // running or waiting to run (state R), not sleeping
	// inCall: in a system call other than a futex wait (/proc's syscall
	// file): the callback's own call, not its thread parked by Go (which
	// parks a locked thread in a futex wait whatever its goroutine waits
	// for: a channel, a lock, a timer, the network, or a P).
	inCall bool
}

// threadFiles are a loop thread's /proc files, opened once by
// LockThread (not when a callback runs long: a descriptor opened then
// would shift the numbers of the server's next connections, which some
// engines deal to loops by) and read again from their start (a few
// microseconds a read).
type threadFiles struct{ stat, schedstat, syscall *os.File }

// openThread opens thread tid's files; nil when it cannot.
func openThread(tid int) *threadFiles {
	dir := "/proc/self/task/" + strconv.Itoa(tid) + "/"
	var f [3]*os.File
	for i, name := range []string{"stat", "schedstat", "syscall"} {
		var err error
		if f[i], err = os.Open(dir + name); err != nil {
			(&threadFiles{f[0], f[1], f[2]}).close()
			return nil
		}
	}
	return &threadFiles{f[0], f[1], f[2]}
}

func (f *threadFiles) close() {
	if f == nil {
		return
	}
	for _, x := range []*os.File{f.stat, f.schedstat, f.syscall} {
		if x != nil {
			x.Close()
		}
	}
}

// sample reads l's thread; ok is false when it cannot be read (then the
// loop's causes are Unknown from then on).
func (l *Loop) sample() (threadSample, bool) {
	files := l.files.Load()
	if files == nil {
		return threadSample{}, false
	}
	tid := l.tid.Load()
	var s threadSample
	// The thread's CPU clock: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
	var ts syscall.Timespec
	id := int32(^uint32(tid)<<3 | 6)
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return s, false
	}
	s.ran = time.Duration(ts.Nano())
	var buf [512]byte
	n, _ := files.schedstat.ReadAt(buf[:], 0)
	f := bytes.Fields(buf[:n]) // "ran_ns waited_ns slices"
	if len(f) < 2 {
		return s, false
	}
	d, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return s, false
	}
	s.delay = time.Duration(d)
	n, _ = files.stat.ReadAt(buf[:], 0) // "tid (comm) S ...": the state after the last ')'
	i := bytes.LastIndexByte(buf[:n], ')')
	if i < 0 || i+2 >= n {
		return s, false
	}
	s.runnable = buf[i+2] == 'R'
	// "202 0x... ..." in a system call (its number first), "running", or
	// "-1 ..." in the kernel otherwise.
	n, _ = files.syscall.ReadAt(buf[:], 0)
	if f := bytes.Fields(buf[:n]); len(f) > 0 {
		nr, err := strconv.Atoi(string(f[0]))
		s.inCall = err == nil && nr >= 0 && nr != syscall.SYS_FUTEX
	}
	return s, true
}
