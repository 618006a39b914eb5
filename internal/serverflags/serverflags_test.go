package serverflags

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
)

// TestDBURL: a --db-url is a postgres:// URL without a password (argv is
// every local user's to read: the password goes in PGPASSWORD); the error
// never repeats it.
func TestDBURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // "" ok, else in the error
	}{
		{"postgres://u@127.0.0.1:5432/db", ""},
		{"postgresql://u@db.example.com/db?sslmode=require", ""},
		{"postgres://u:S3CRET@127.0.0.1:5432/db", "PGPASSWORD"},
		{"postgres://u@127.0.0.1:5432/db?password=S3CRET", "PGPASSWORD"},
		{"user=u password=S3CRET host=127.0.0.1", "postgres://"},
		{"postgres://u:S3CRET@127.0.0.1:5432/db%zz", "postgres://"},
	} {
		c := Defaults("127.0.0.1:0", "")
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Register(fs)
		if err := fs.Parse([]string{"--block-mode", "postgres", "--db-url", tc.url}); err != nil {
			t.Fatal(err)
		}
		err := c.Validate("xserver")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "xserver: --db-url")):
			t.Errorf("%s: %v, want an error with %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "S3CRET"):
			t.Errorf("%s: the error repeats the password: %v", tc.url, err)
		}
	}
}

// TestPast: each timeout from its own moment, and none where none is set.
func TestPast(t *testing.T) {
	c := Common{IdleTimeout: time.Minute, HeaderTimeout: 10 * time.Second, BodyTimeout: 5 * time.Second}
	ns := func(d time.Duration) int64 { return int64(d) }
	for _, tc := range []struct {
		name                     string
		now, lastActive, partial int64
		headerDone               bool
		want                     Timeout
	}{
		{"idle, not yet", ns(time.Minute), 1, 0, false, NotPast},
		{"idle", ns(time.Minute) + 2, 1, 0, false, IdlePast},
		{"headers", ns(11 * time.Second), ns(11 * time.Second), 1, false, HeaderPast},
		{"headers, not yet", ns(9 * time.Second), 1, 1, false, NotPast},
		{"body", ns(6 * time.Second), ns(6 * time.Second), 1, true, BodyPast},
		{"an incomplete request is not idle", ns(2 * time.Minute), 1, ns(2*time.Minute) - 1, false, NotPast},
	} {
		if got := c.Past(tc.now, tc.lastActive, tc.partial, tc.headerDone); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := (&Common{}).Past(1<<62, 1, 0, false); got != NotPast {
		t.Errorf("no timeout set: %v", got)
	}
	for _, tc := range []struct {
		c    Common
		want time.Duration
	}{{Common{}, 0}, {c, time.Second}, {Common{IdleTimeout: 100 * time.Millisecond}, 25 * time.Millisecond}, {Common{BodyTimeout: time.Millisecond}, 10 * time.Millisecond}} {
		if got := tc.c.SweepEvery(); got != tc.want {
			t.Errorf("SweepEvery %+v: %s, want %s", tc.c, got, tc.want)
		}
	}
}

// TestBlockFlag: --block is the kit's one block type from the flag on
// (protocol.Block, what results.Block is), its default 5ms; a number
// without a unit, or a block above --max-block, is refused by name.
func TestBlockFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want protocol.Block
		err  string
	}{
		{nil, protocol.Block(5 * time.Millisecond), ""},
		{[]string{"--block", "7ms"}, protocol.Block(7 * time.Millisecond), ""},
		{[]string{"--block", "0"}, 0, ""},
		{[]string{"--block", "5"}, 0, `--block "5": want a duration such as 5ms`},
		{[]string{"--block", "2s", "--max-block", "1s"}, 0, "--block 2s: want 0 to --max-block (1s)"},
	} {
		c := Defaults("127.0.0.1:0", "")
		var stderr strings.Builder
		err := Parse("testserver", "a test", &c, tc.args, &stderr, func(*flag.FlagSet) {})
		if err == nil {
			err = c.Validate("testserver")
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err == "" && c.Block != tc.want:
			t.Errorf("%v: block %s, want %s", tc.args, c.Block, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error()+stderr.String(), tc.err)):
			t.Errorf("%v: %v (stderr %q), want an error saying %q", tc.args, err, stderr.String(), tc.err)
		}
	}
}
