package ready

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ready")
	if err := Write(p, File{Addr: "127.0.0.1:1", Admin: "127.0.0.1:2", Kind: "loop", Workers: 4}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(p)
	if err != nil || f.Addr != "127.0.0.1:1" || f.Admin != "127.0.0.1:2" || f.PID != os.Getpid() || f.Workers != 4 || f.Schema != Schema {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestStrict(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown field": `{"schema":"bystander.ready/v1","pid":1,"port":3}`,
		"trailing":      `{"schema":"bystander.ready/v1","pid":1} {}`,
		"schema":        `{"schema":"bystander.ready/v0","pid":1}`,
		"not json":      `listening on http://127.0.0.1:1`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

func TestWait(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ready")
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = Write(p, File{Addr: "a"})
	}()
	if f, err := Wait(context.Background(), p, nil, 10*time.Second); err != nil || f.Addr != "a" {
		t.Fatalf("%+v %v", f, err)
	}
	ended := make(chan struct{})
	close(ended)
	if _, err := Wait(context.Background(), filepath.Join(dir, "never"), ended, 10*time.Second); !errors.Is(err, ErrEnded) {
		t.Errorf("ended: %v", err)
	}
	if _, err := Wait(context.Background(), filepath.Join(dir, "never"), nil, 20*time.Millisecond); err == nil {
		t.Error("no timeout")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Wait(ctx, filepath.Join(dir, "never"), nil, 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("ctx: %v", err)
	}
}
