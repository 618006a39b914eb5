package lag

import "golang.org/x/sys/unix"

// sysEpollWait is epoll_wait, which Go's syscall package calls on amd64
// (golang.org/x/sys/unix calls epoll_pwait).
const sysEpollWait = unix.SYS_EPOLL_WAIT
