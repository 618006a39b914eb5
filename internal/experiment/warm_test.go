package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestWarmDoesNotSpin: warming a service up, a connection whose answers
// are the service's to give (a 503 shedding load) asks again after a
// failed answer only once its pause is over: against a 503 that closes
// the connection it redialled back to back for the whole warm-up.
func TestWarmDoesNotSpin(t *testing.T) {
	srv := wiretest.AnswerWith(t, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 5\r\n\r\nbusy\n", true)
	conns := []warmConn{
		{client.New(srv.Addr, "/", 5*time.Second), "--load GET /", true},
		{client.New(srv.Addr, "/", 5*time.Second), "--load GET /", true},
	}
	start := time.Now()
	if err := warmConns(context.Background(), srv.Addr, time.Second, conns); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Each connection asks after 0, 10, 50, 210 and 850 ms in its first second.
	if n := srv.Accepts(); n > 12 {
		t.Errorf("%d connections in %s from 2 warming connections: want at most 12", n, took.Round(time.Millisecond))
	}
}
