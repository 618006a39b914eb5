package main

import (
	"reflect"
	"syscall"

	"github.com/lesismal/nbio"
)

// nbioUnsent is how many bytes nbio holds unsent for nc: its connection's
// unexported left (v1.6.8 conn_unix.go; TestNbioUnsentField fails if it
// moves). It is read on the connection's loop, the goroutine that writes
// and flushes it.
func nbioUnsent(nc *nbio.Conn) int {
	if nbioLeft == nil {
		return 0
	}
	return int(reflect.ValueOf(nc).Elem().FieldByIndex(nbioLeft).Int())
}

// nbioLeft is where nbio's connection keeps its unsent bytes.
var nbioLeft = func() []int {
	f, ok := reflect.TypeFor[nbio.Conn]().FieldByName("left")
	if !ok || f.Type.Kind() != reflect.Int {
		return nil
	}
	return f.Index
}()

// nbioEpfd is the epoll set of nc's poller (its unexported p.epfd, v1.6.8
// poller_epoll.go; TestNbioEpollField fails if it moves), or -1.
func nbioEpfd(nc *nbio.Conn) int {
	p, ok := fieldOf(reflect.ValueOf(nc), "p", reflect.Pointer)
	if !ok {
		return -1
	}
	f, ok := fieldOf(p, "epfd", reflect.Int)
	if !ok {
		return -1
	}
	return int(f.Int())
}

// hold takes the connection's descriptor out of its poller's epoll set
// while the core keeps a duplicate of it (traits.keepsClosedFDs): nbio
// closes a descriptor without deleting it from the set, and the entry
// lives as long as the socket.
func (l *nbioLink) hold() {
	nc := l.nc
	if ep := nbioEpfd(nc); ep >= 0 {
		_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, nc.Hash(), nil)
	}
}

// release puts the descriptor back in the set with the events nbio asks
// for in its level-triggered mode (the kit's: Config.EpollMod unset),
// writes too if output waits, unless nbio has closed it meanwhile (on this
// loop, as every close of it is).
func (l *nbioLink) release() {
	nc := l.nc
	ep := nbioEpfd(nc)
	if closed, _ := nc.IsClosed(); closed || ep < 0 {
		return
	}
	events := uint32(syscall.EPOLLERR | syscall.EPOLLHUP | syscall.EPOLLRDHUP | syscall.EPOLLPRI | syscall.EPOLLIN)
	if nbioUnsent(nc) > 0 {
		events |= syscall.EPOLLOUT
	}
	fd := nc.Hash()
	_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Fd: int32(fd), Events: events})
}
