package client

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The poller's system calls go to the kernel directly (RawSyscall), not
// through Go's syscall path: that one tells the scheduler the thread may
// block, and while the poller waits in epoll the runtime's monitor thread
// then woke every 20 us and handed the processor to a thread that found
// nothing to do and slept again, a futex and a nanosleep per probe that
// cost several times what the probe did (measured: docs/measurements.md).
// Reads and writes are non-blocking; the wait blocks, holding its
// processor, until an event, its timeout or a signal (the runtime's
// preemption signal interrupts it with EINTR, and Run goes round again).
// A wait holds its processor only while at least one other is free
// (rawHeld): with one processor (GOMAXPROCS=1, a process pinned to one CPU),
// or as many pollers waiting as processors, the wait goes through Go's path
// after all, so that the process's other goroutines are never kept waiting
// for a preemption every 10 ms.

func rawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// recv reads into c's buffer with recvmsg, keeping the kernel's receive
// timestamp of the bytes read (c.stamp; 0 when none came with them).
func (c *PConn) recv() (int, error) {
	b := c.buf[c.w:]
	if len(b) == 0 {
		return 0, nil
	}
	c.iov.Base = &b[0]
	c.iov.SetLen(len(b))
	c.msg.Iov = &c.iov
	c.msg.Iovlen = 1
	c.msg.Control = &c.oob[0]
	c.msg.SetControllen(len(c.oob))
	n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&c.msg)), 0)
	if errno != 0 {
		return 0, errno
	}
	if n == 0 {
		// The close, which carries no stamp: an answer it ends is timed
		// by its last bytes.
		return 0, nil
	}
	c.stamp = 0
	if cl := int(c.msg.Controllen); cl >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c.oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && int(h.Len) >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&c.oob[unix.CmsgLen(0)]))
			c.stamp = ts.Nano()
		}
	}
	return int(n), nil
}

// rawHeld counts the pollers of this process waiting in the kernel with
// their processor held.
var rawHeld atomic.Int32

// pwait2 is whether epoll_pwait2 (Linux 5.11) is there: a timeout in
// nanoseconds. Without it the wait is epoll_wait's in whole milliseconds,
// rounded up (late by up to a millisecond, never early).
var pwait2 atomic.Int32 // 0 unknown, 1 yes, 2 no

func epollWait(epfd int, events []unix.EpollEvent, d time.Duration, shared bool) (int, error) {
	ev := uintptr(unsafe.Pointer(&events[0]))
	call := unix.RawSyscall6
	if shared {
		call = unix.Syscall6
	}
	if pwait2.Load() != 2 {
		var tsp uintptr // nil: no timeout
		var ts unix.Timespec
		if d >= 0 {
			ts = unix.NsecToTimespec(int64(d))
			tsp = uintptr(unsafe.Pointer(&ts))
		}
		n, _, errno := call(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), ev, uintptr(len(events)), tsp, 0, 0)
		if errno != unix.ENOSYS {
			pwait2.Store(1)
			if errno != 0 {
				return 0, errno
			}
			return int(n), nil
		}
		pwait2.Store(2)
	}
	ms := -1
	if d >= 0 {
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	n, _, errno := call(unix.SYS_EPOLL_PWAIT, uintptr(epfd), ev, uintptr(len(events)), uintptr(ms), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
