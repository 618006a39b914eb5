//go:build !amd64

package lag

// sysEpollWait: elsewhere Go's waits are epoll_pwait (arm64 has no
// epoll_wait); -1 matches no system call.
const sysEpollWait = -1
