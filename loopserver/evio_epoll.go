package main

import (
	"reflect"

	"github.com/tidwall/evio"
	"golang.org/x/sys/unix"
)

// quiet makes the connection's entry in its loop's epoll set
// edge-triggered while the core keeps a duplicate of its socket (an answer
// is owed): evio closes a descriptor at the end of input without taking it
// out of its level-triggered set, and the entry lives as long as the
// socket, so the end of input was reported again at every wait and the
// loop spun until the answer went out. Edge-triggered, it is reported
// once. evio sets the entry level-triggered again itself when it next has
// output for the connection (an answer: its ModReadWrite), which it does
// only while it has it open; with neither output nor an action to take it
// changes nothing after this callback (v1.0.8 loopRead, loopWake).
func (l *evioLink) quiet() {
	ep, ok := evioEpfd(l.ec)
	fd := l.fd()
	if !ok || fd < 0 {
		return
	}
	_ = unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Fd: int32(fd), Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET})
}

// evioEpfd is the epoll set of ec's loop (evio v1.0.8: conn.loop.poll.fd,
// all unexported; TestEvioUnsentField fails if it moves).
func evioEpfd(ec evio.Conn) (int, bool) {
	v := reflect.ValueOf(ec)
	for _, f := range []struct {
		name string
		kind reflect.Kind
	}{{"loop", reflect.Pointer}, {"poll", reflect.Pointer}, {"fd", reflect.Int}} {
		var ok bool
		if v, ok = fieldOf(v, f.name, f.kind); !ok {
			return -1, false
		}
	}
	return int(v.Int()), true
}
