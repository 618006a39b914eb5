package lag

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxStreams is how many /lag streams a server feeds at once; more are
// refused with 503, so that watchers cannot pile up on the admin side.
const MaxStreams = 16

// A stream's connection buffers at most SendBuffer bytes on the server's
// side. A stream whose client has not taken what it was sent for
// StallLimit is closed and its slot freed: its receive window (TCP_INFO)
// has not reopened to what it was since, or a write waited that long.
const (
	SendBuffer = 16 << 10
	StallLimit = 5 * time.Second
)

// takes watches whether a client takes what a stream sends it: a client
// that reads reopens its receive window to its largest after each event it
// is sent; one that does not leaves it shrinking.
type takes struct {
	rc      syscall.RawConn
	largest uint32
	open    time.Time
}

func takesOf(nc net.Conn) *takes {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &takes{rc: rc, open: time.Now()}
}

// stalled says whether the window has stayed below its largest, less one
// event's worth of slack, for StallLimit.
func (t *takes) stalled(now time.Time, slack int) bool {
	if t == nil {
		return false
	}
	var info *unix.TCPInfo
	var err error
	if cerr := t.rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); cerr != nil || err != nil || info.Snd_wnd == 0 && t.largest == 0 {
		return false // not known: the write deadline still holds
	}
	w := info.Snd_wnd
	t.largest = max(t.largest, w)
	if int(w)+slack >= int(t.largest) {
		t.open = now
		return false
	}
	return now.Sub(t.open) > StallLimit
}

// Handler streams m's events: one per window (?every=, 100ms by default
// and at least), as Server-Sent Events when the client asks for
// text/event-stream (a browser's EventSource does) or ?format=sse, else as
// NDJSON, one JSON object per line. ?for=DURATION ends the stream after
// that long; otherwise it runs until the client leaves or the server stops.
func Handler(m *Monitor) http.Handler {
	var open atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		every := MinEvery
		if v := q.Get("every"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < MinEvery || d > 10*time.Second {
				http.Error(w, fmt.Sprintf("every=%q: want a duration from %s to 10s\n", v, MinEvery), http.StatusBadRequest)
				return
			}
			every = d
		}
		var until <-chan time.Time
		if v := q.Get("for"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > 24*time.Hour {
				http.Error(w, fmt.Sprintf("for=%q: want a positive duration up to 24h\n", v), http.StatusBadRequest)
				return
			}
			t := time.NewTimer(d)
			defer t.Stop()
			until = t.C
		}
		sse := q.Get("format") == "sse" || r.Header.Get("Accept") == "text/event-stream"
		if f := q.Get("format"); f != "" && f != "sse" && f != "ndjson" {
			http.Error(w, fmt.Sprintf("format=%q: want sse or ndjson\n", f), http.StatusBadRequest)
			return
		}
		if m.Options().Interval <= 0 && m.Options().Warn <= 0 {
			http.Error(w, "this server measures no loop lag (--lag-interval 0 and --block-warn 0)\n", http.StatusNotFound)
			return
		}
		if open.Add(1) > MaxStreams {
			open.Add(-1)
			http.Error(w, fmt.Sprintf("%d lag streams are open already\n", MaxStreams), http.StatusServiceUnavailable)
			return
		}
		defer open.Add(-1)
		// The stream takes the connection over: so that its send buffer is
		// small and every write has a deadline, and a client that stops
		// reading cannot hold a slot for long. The body ends when the
		// connection closes.
		nc, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "lag: cannot stream on this connection\n", http.StatusInternalServerError)
			return
		}
		defer nc.Close()
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(SendBuffer)
		}
		ctype := "application/x-ndjson"
		if sse {
			ctype = "text/event-stream"
		}
		// A dashboard on another port may watch: Access-Control-Allow-Origin.
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nCache-Control: no-store\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n", ctype)
		write := func() error {
			_ = nc.SetWriteDeadline(time.Now().Add(StallLimit))
			return bw.Flush()
		}
		if write() != nil {
			return
		}
		watch := takesOf(nc)
		// The client's side of a hijacked connection: its leaving shows as
		// a read that ends.
		gone := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, nc)
			close(gone)
		}()
		c := m.NewCursor(time.Now().UnixNano())
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-gone:
				return
			case <-until:
				return
			case now := <-t.C:
				b, _ := json.Marshal(m.Next(c, now.UnixNano()))
				if sse {
					fmt.Fprintf(bw, "event: lag\nid: %s\ndata: %s\n\n", strconv.FormatInt(now.UnixNano(), 10), b)
				} else {
					fmt.Fprintf(bw, "%s\n", b)
				}
				if write() != nil || watch.stalled(now, 4*len(b)+4096) {
					return // the client stopped reading: its slot is freed
				}
			}
		}
	})
}
