package prose

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
)

// TestStallLine: a server's stall counts in one line when every k has the
// same connections, else each as it is, by k.
func TestStallLine(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"3 of 12", "6 of 12", "9 of 12", "12 of 12"}, "3, 6, 9, 12 of 12"},
		{[]string{"3 of 12", "machine too busy to judge"}, "k=1: 3 of 12; k=2: machine too busy to judge"},
		{[]string{"3 [2-3] of 12"}, "k=1: 3 [2-3] of 12"},
		{[]string{"3 of 12 (1 of 3 repetitions judged)"}, "k=1: 3 of 12 (1 of 3 repetitions judged)"},
	} {
		if got := StallLine(c.in); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPublishedFor: a headline tile's published figure carries what
// differs from the publication, all of it but a condition the publication
// does not state: a database run's tiles said "17,189 req/s" beside a pool
// its database bound, dropping that the published call was Thread.sleep.
func TestPublishedFor(t *testing.T) {
	rows := []FacePublished{
		{What: findings.PublishedSweep, Server: "pool", Published: "17,189 req/s",
			Differs: "callers: 64 here, not published; the call: a database call through 10 connections here, Thread.sleep published"},
		{What: findings.PublishedSweep, Server: "loop-gnet", Published: "549 req/s", Differs: "callers: 64 here, not published"},
		{What: findings.PublishedOffload, Server: "loop-gnet", Published: "18,311 req/s", Differs: "callers: 64 here, 128 published"},
	}
	for _, tc := range []struct{ what, server, want string }{
		{findings.PublishedSweep, "pool", "17,189 req/s (the call: a database call through 10 connections here, Thread.sleep published)"},
		{findings.PublishedSweep, "loop-gnet", "549 req/s"},
		{findings.PublishedOffload, "loop-gnet", "18,311 req/s (callers: 64 here, 128 published)"},
		{findings.PublishedOffload, "pool", ""},
	} {
		if got := publishedFor(rows, tc.what, tc.server); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.what, tc.server, got, tc.want)
		}
	}
}

// TestSayOnce: a tile's two published figures say what differs once.
func TestSayOnce(t *testing.T) {
	for _, tc := range [][4]string{
		{"17,189 req/s (the call: x)", "0 ms (the call: x)", "17,189 req/s", "0 ms (the call: x)"},
		{"549 req/s (callers: 64 here, 128 published)", "217 ms", "549 req/s (callers: 64 here, 128 published)", "217 ms"},
		{"549 req/s (a)", "217 ms (b)", "549 req/s (a)", "217 ms (b)"},
		{"549 req/s", "", "549 req/s", ""},
	} {
		if a, b := sayOnce(tc[0], tc[1]); a != tc[2] || b != tc[3] {
			t.Errorf("sayOnce(%q, %q) = %q, %q", tc[0], tc[1], a, b)
		}
	}
}
