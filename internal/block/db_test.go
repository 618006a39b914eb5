package block

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/pgrun"
	"github.com/bystander-kit/bystander/internal/wiretest"
	"github.com/jackc/pgx/v5"
)

// The Postgres mode holds a database connection for at least the block
// asked, the pool's size bounds how many calls hold one at once (a second
// ceiling: 6 calls of 50 ms on 2 connections take 150 ms at least), the
// time reported is the connection's, not the wait for it, and a database
// that went away fails the call with an error, at once.
func TestPostgres(t *testing.T) {
	in := wiretest.Postgres(t)
	db, err := OpenDB(context.Background(), in.URL(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	call := Call{Mode: Postgres, DB: db}
	if d, err := call.For(20 * time.Millisecond); err != nil || d < 20*time.Millisecond {
		t.Fatalf("one call: %s, %v", d, err)
	}
	const calls, block = 6, 50 * time.Millisecond
	var wg sync.WaitGroup
	held := make([]time.Duration, calls)
	start := time.Now()
	for i := range calls {
		wg.Go(func() {
			var err error
			if held[i], err = call.For(block); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if took < calls/2*block {
		t.Errorf("%d calls of %s on 2 connections took %s: the pool did not bound them", calls, block, took)
	}
	for i, h := range held {
		if h < block || h >= took {
			t.Errorf("call %d held its connection %s (asked %s, all took %s)", i, h, block, took)
		}
	}
	if _, err := OpenDB(context.Background(), in.URL(), 0); err == nil {
		t.Error("a pool of 0 connections opened")
	}
	if err := in.Stop(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := call.For(block); err == nil || !strings.HasPrefix(err.Error(), "database: ") {
		t.Errorf("a call to a stopped database: %v", err)
	}
	if took := time.Since(start); took > DBWait {
		t.Errorf("a call to a stopped database took %s", took)
	}
	if _, err := (Call{Mode: Postgres}).For(block); err == nil {
		t.Error("postgres mode without a database: no error")
	}
}

// TestOpenDBTooManyClients: a pool larger than the database lets in fails
// at once, in the database's own words, and gives back every connection
// it took (it hung for ever: the pool was closed while it still held
// them, and closing waits for them).
func TestOpenDBTooManyClients(t *testing.T) {
	in := wiretest.PostgresWith(t, pgrun.Options{MaxConnections: 4})
	const limit = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		db, err := OpenDB(ctx, in.URL(), 10)
		db.Close()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "too many clients") {
			t.Errorf("OpenDB of 10 connections where 4 are let in: %v, want the database's \"too many clients\"", err)
		}
		if ctx.Err() != nil {
			t.Errorf("OpenDB returned only at its deadline: %v", err)
		}
		t.Log(err)
	case <-time.After(limit + 30*time.Second):
		t.Fatalf("OpenDB still waits %s after its deadline", 30*time.Second)
	}
	// Every connection it opened is closed: all 4 are free again.
	var held []*pgx.Conn
	defer func() {
		for _, c := range held {
			c.Close(context.Background())
		}
	}()
	for i := range 4 {
		c, err := in.Connect(context.Background())
		if err != nil {
			t.Fatalf("connection %d of 4 after OpenDB gave up: %v", i+1, err)
		}
		held = append(held, c)
	}
}
