package lag

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// MaxStreams is how many /lag streams a server feeds at once; more are
// refused with 503, so that watchers cannot pile up on the admin side.
const MaxStreams = 16

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
		fl, _ := w.(http.Flusher)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Access-Control-Allow-Origin", "*") // a dashboard on another port may watch
		w.WriteHeader(http.StatusOK)
		if fl != nil {
			fl.Flush()
		}
		c := m.NewCursor(time.Now().UnixNano())
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-until:
				return
			case now := <-t.C:
				b, _ := json.Marshal(m.Next(c, now.UnixNano()))
				var err error
				if sse {
					_, err = fmt.Fprintf(w, "event: lag\nid: %s\ndata: %s\n\n", strconv.FormatInt(now.UnixNano(), 10), b)
				} else {
					_, err = fmt.Fprintf(w, "%s\n", b)
				}
				if err != nil {
					return
				}
				if fl != nil {
					fl.Flush()
				}
			}
		}
	})
}
