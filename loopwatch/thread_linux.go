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
}

// threadFiles are a loop thread's /proc files, opened once by
// LockThread (not when a callback runs long: a descriptor opened then
// would shift the numbers of the server's next connections, which some
// engines deal to loops by) and read again from their start (a few
// microseconds a read).
type threadFiles struct{ stat, schedstat *os.File }

// openThread opens thread tid's files; nil when it cannot.
func openThread(tid int) *threadFiles {
	dir := "/proc/self/task/" + strconv.Itoa(tid) + "/"
	st, err1 := os.Open(dir + "stat")
	ss, err2 := os.Open(dir + "schedstat")
	if err1 != nil || err2 != nil {
		if st != nil {
			st.Close()
		}
		if ss != nil {
			ss.Close()
		}
		return nil
	}
	return &threadFiles{st, ss}
}

func (f *threadFiles) close() {
	if f != nil {
		f.stat.Close()
		f.schedstat.Close()
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
	return s, true
}
