package outside

import (
	"runtime"
	"strconv"
)

// The system calls the outside view names, by number on this machine's
// architecture. A call not listed is shown by its number.
var callNames = map[string]map[int]string{
	"amd64": {0: "read", 1: "write", 7: "poll", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 23: "select",
		34: "pause", 35: "nanosleep", 42: "connect", 43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg",
		61: "wait4", 74: "fsync", 75: "fdatasync", 128: "rt_sigtimedwait", 202: "futex", 230: "clock_nanosleep",
		232: "epoll_wait", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 288: "accept4", 426: "io_uring_enter", 441: "epoll_pwait2"},
	"arm64": {22: "epoll_pwait", 63: "read", 64: "write", 65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6",
		73: "ppoll", 82: "fsync", 83: "fdatasync", 98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 137: "rt_sigtimedwait",
		202: "accept", 203: "connect", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg", 242: "accept4",
		260: "wait4", 426: "io_uring_enter", 441: "epoll_pwait2"},
}

// callName is the system call's name, or "syscall N".
func callName(nr int) string {
	if n, ok := callNames[runtime.GOARCH][nr]; ok {
		return n
	}
	return "syscall " + strconv.Itoa(nr)
}

// idleCalls are where a thread waits for work: an event loop's wait for
// its descriptors, an acceptor's accept, a signal thread's wait.
var idleCalls = map[string]bool{"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true, "poll": true, "ppoll": true,
	"select": true, "pselect6": true, "accept": true, "accept4": true, "io_uring_enter": true, "rt_sigtimedwait": true, "pause": true, "wait4": true}

// idleWaits are the kernel functions (wchan) of those waits, for where the
// call itself cannot be read.
var idleWaits = map[string]bool{"ep_poll": true, "do_epoll_wait": true, "do_sys_poll": true, "do_select": true, "core_sys_select": true,
	"inet_csk_accept": true, "io_cqring_wait": true, "do_sigtimedwait": true, "sys_pause": true, "do_wait": true}

// fdCall says whether the call's first argument is a descriptor the view
// names.
func fdCall(nr int) bool {
	switch callName(nr) {
	case "read", "write", "pread64", "pwrite64", "readv", "writev", "connect", "sendto", "recvfrom", "sendmsg", "recvmsg", "fsync", "fdatasync":
		return true
	}
	return false
}
