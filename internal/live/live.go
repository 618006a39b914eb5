// Package live carries what the measuring tools see while they run, for
// the stage (run.sh --stage): a tool appends one JSON line per event to a
// file (--live-out), and the orchestrator tails it.
package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// Writer appends JSON lines to a file; safe for concurrent use. A nil
// Writer writes nothing.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Create opens path for the tool's live lines; "" gives a nil Writer.
func Create(path string) (*Writer, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends v as one line (written at once, so a reader sees whole
// lines).
func (w *Writer) Write(v any) {
	if w == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.f.Write(append(b, '\n'))
}

// Close closes the file.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// Tail calls fn with each whole line appended to path until ctx ends, then
// reads what is left and returns. A file not there yet is waited for.
func Tail(ctx context.Context, path string, every time.Duration, fn func(line []byte)) {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var r *bufio.Reader
	var part []byte
	read := func() {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				f = nil
				return
			}
			r = bufio.NewReaderSize(f, 64<<10)
		}
		for {
			b, err := r.ReadBytes('\n')
			part = append(part, b...)
			if err == io.EOF {
				return // a line still being written stays in part
			}
			if err != nil {
				return
			}
			if line := bytes.TrimSpace(part); len(line) > 0 {
				fn(line)
			}
			part = part[:0]
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		read()
		select {
		case <-ctx.Done():
			read()
			return
		case <-t.C:
		}
	}
}

// Probe is one --live-out line of a prober: a probe on a connection (and
// its loop) answered, or failed, Ms after it was due, DueMs after the
// clock started; WaitMs is what the server made it wait, from its own
// timestamps (results.ConnStat.ServerWait), when it said.
type Probe struct {
	Conn   int     `json:"conn"`
	Loop   int     `json:"loop"`
	DueMs  float64 `json:"due_ms"`
	Ms     float64 `json:"ms"`
	WaitMs float64 `json:"wait_ms,omitempty"`
	Failed bool    `json:"failed,omitempty"`
}

// Load is one --live-out line of loadgen: requests answered since the
// clock started (warm-up included), Ms after it; End on the last line.
type Load struct {
	Ms       int64 `json:"ms"`
	Answered int64 `json:"answered"`
	End      bool  `json:"end,omitempty"`
}
