package client

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Poller's connections are dialled with Go's dialler and then read and
// written by the poller itself, through a duplicate of the socket.

// Dial opens every connection not open yet, in order; the first failure
// is returned, classified.
func (p *Poller) Dial() error {
	for _, c := range p.conns {
		if err := p.dial(c); err != nil {
			return err
		}
	}
	return nil
}

// dial opens c with Go's dialler (a timeout, and its errors), then takes a
// duplicate of the socket into the epoll set and closes Go's: the poller
// reads and writes the descriptor itself.
func (p *Poller) dial(c *PConn) error {
	if c.fd >= 0 {
		return nil
	}
	nc, err := net.DialTimeout("tcp", c.addr, c.timeout)
	if err != nil {
		return &Error{classify(err), err}
	}
	defer nc.Close()
	tc := nc.(*net.TCPConn)
	_ = tc.SetNoDelay(true)
	rc, err := tc.SyscallConn()
	if err != nil {
		return &Error{Other, err}
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return &Error{Other, fmt.Errorf("taking the socket: %w", err)}
	}
	// The duplicate shares the open file, non-blocking as Go set it.
	set := p.epfd
	if p.sockfd >= 0 {
		set = p.sockfd
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			unix.Close(fd)
			return &Error{Other, fmt.Errorf("SO_TIMESTAMPNS: %w", err)}
		}
		if c.oob == nil {
			c.oob = make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
		}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.ID)}
	if err := unix.EpollCtl(set, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return &Error{Other, fmt.Errorf("epoll: %w", err)}
	}
	c.fd = fd
	c.Dials++
	if c.buf == nil {
		c.buf = make([]byte, 4096)
	}
	c.r, c.w = 0, 0
	return nil
}

// drop closes c's socket; its next request redials.
func (p *Poller) drop(c *PConn) {
	if c.fd < 0 {
		return
	}
	_ = unix.EpollCtl(p.sockSet(), unix.EPOLL_CTL_DEL, c.fd, nil)
	unix.Close(c.fd)
	c.fd, c.out = -1, nil
}

// sockSet is the epoll set the connections' sockets are in.
func (p *Poller) sockSet() int {
	if p.sockfd >= 0 {
		return p.sockfd
	}
	return p.epfd
}

// watchOut asks the socket's epoll set to wake when c's socket takes more
// of the request (on), or no longer (off).
func (p *Poller) watchOut(c *PConn, on bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.ID)}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	if err := unix.EpollCtl(p.sockSet(), unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	return nil
}
