package live

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Lines written while the tail runs all arrive, whole and in order, and a
// file created after the tail started is found.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.ndjson")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []int
	done := make(chan struct{})
	go func() {
		Tail(ctx, path, 5*time.Millisecond, func(line []byte) {
			var v struct{ N int }
			if err := json.Unmarshal(line, &v); err != nil {
				t.Errorf("a torn line: %q", line)
			}
			mu.Lock()
			got = append(got, v.N)
			mu.Unlock()
		})
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		w.Write(struct{ N int }{i})
	}
	w.Close()
	cancel()
	<-done
	if len(got) != 2000 {
		t.Fatalf("%d lines arrived, want 2000", len(got))
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("line %d says %d", i, n)
		}
	}
	var nw *Writer
	nw.Write(1) // a nil Writer writes nothing, and does not panic
	if w, err := Create(""); w != nil || err != nil {
		t.Fatal("Create(\"\") should be a nil Writer")
	}
}
