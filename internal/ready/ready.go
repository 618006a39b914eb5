// Package ready is how a process the kit starts says it is ready: one JSON
// file (schema bystander.ready/v1), written whole through a rename, naming
// where it listens and its PID, or for a prober, the connections it placed.
// The orchestrator waits for the file instead of reading prose from a pipe.
// The Java servers of examples/java write the same file.
package ready

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// Schema names the format.
const Schema = "bystander.ready/v1"

// MaxBytes bounds what is read of a ready file.
const MaxBytes = 64 << 10

// File is what a ready process says.
type File struct {
	Schema string `json:"schema"`
	// A server: where it serves the protocol, its admin listener ("" when
	// it has none), its kind (loop or pool) and loops or worker slots.
	Addr    string `json:"addr,omitempty"`
	Admin   string `json:"admin,omitempty"`
	PID     int    `json:"pid"`
	Kind    string `json:"kind,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// A prober: the connections it placed, how they spread over the loops
	// ("loop 0: 3, ..."), and the baseline it measured while placing them.
	Conns      int     `json:"conns,omitempty"`
	Spread     string  `json:"spread,omitempty"`
	BaselineUs float64 `json:"baseline_us,omitempty"`
	// Line is what the process printed when it became ready.
	Line string `json:"line,omitempty"`
}

// Write writes f (its schema and PID filled in) to path, whole or not at all.
func Write(path string, f File) error {
	f.Schema = Schema
	if f.PID == 0 {
		f.PID = os.Getpid()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o644)
}

// Read reads a ready file strictly: its schema, no unknown field, one value.
func Read(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("ready: %w", err)
	}
	if len(b) > MaxBytes {
		return f, fmt.Errorf("ready: %s is %d bytes, more than %d", path, len(b), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("ready: %s: %w", path, err)
	}
	if dec.More() {
		return f, fmt.Errorf("ready: %s: data after the JSON value", path)
	}
	if f.Schema != Schema {
		return f, fmt.Errorf("ready: %s: schema %q, want %q", path, f.Schema, Schema)
	}
	return f, nil
}

// ErrEnded is returned by Wait when the process ended before it was ready.
var ErrEnded = errors.New("ready: the process ended before it said it was ready")

// Wait waits until path holds a ready file, the process ends (ended is
// closed), ctx is done, or timeout passes.
func Wait(ctx context.Context, path string, ended <-chan struct{}, timeout time.Duration) (File, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return Read(path)
		}
		select {
		case <-ctx.Done():
			return File{}, ctx.Err()
		case <-ended:
			if _, err := os.Stat(path); err == nil {
				return Read(path)
			}
			return File{}, ErrEnded
		case <-tick.C:
			if time.Now().After(deadline) {
				return File{}, fmt.Errorf("ready: not ready within %s", timeout)
			}
		}
	}
}
