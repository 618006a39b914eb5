package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestParse: a bad value is one line naming the program; --help prints
// the usage and says so.
func TestParse(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("loopserver", flag.ContinueOnError)
		fs.Duration("block", time.Millisecond, "how long /slow blocks")
		fs.Usage = func() { _, _ = fs.Output().Write([]byte("Usage: loopserver [flags]\n")) }
		return fs
	}
	var stderr strings.Builder
	err := Parse(newFS(), []string{"--block", "fast"}, &stderr)
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.HasPrefix(err.Error(), "loopserver: ") || !strings.Contains(err.Error(), "--help") {
		t.Fatalf("error %q", err)
	}
	if stderr.Len() != 0 {
		t.Fatalf("a bad value printed %q", stderr.String())
	}
	if err := Parse(newFS(), []string{"--help"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "Usage: loopserver") {
		t.Fatalf("--help: %v, printed %q", err, stderr.String())
	}
	if err := Parse(newFS(), []string{"--block", "2ms"}, &stderr); err != nil {
		t.Fatal(err)
	}
}

// TestParseSaysFlagsAsTheREADME: errors name flags with two dashes, as
// the README and --help do, and a duration or number that does not parse
// says what form it wants.
func TestParseSaysFlagsAsTheREADME(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--block=abc"}, []string{"--block", `"abc"`, "a Go duration such as 5ms"}},
		{[]string{"--loops=four"}, []string{"--loops", `"four"`, "a whole number"}},
		{[]string{"--nope"}, []string{"--nope", "not defined"}},
		{[]string{"--block"}, []string{"--block", "needs a value"}},
	} {
		fs := flag.NewFlagSet("run.sh", flag.ContinueOnError)
		fs.Duration("block", time.Millisecond, "")
		fs.Int("loops", 4, "")
		err := Parse(fs, tc.args, &strings.Builder{})
		if err == nil {
			t.Fatalf("%v accepted", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), " -block") || strings.Contains(err.Error(), " -loops") || strings.Contains(err.Error(), "parse error") {
			t.Errorf("%v: %q names a flag with one dash or says only 'parse error'", tc.args, err)
		}
	}
}

func TestStartAt(t *testing.T) {
	var s StartAt
	if err := s.Set("soon"); err == nil {
		t.Error("accepted soon")
	}
	if err := s.Set(time.Now().Add(2 * time.Hour).Format(time.RFC3339Nano)); err == nil {
		t.Error("accepted two hours ahead")
	}
	at := time.Now().Add(50 * time.Millisecond)
	if err := s.Set(at.Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
	if start, ok := s.Begin(t.Context()); !ok || !start.Equal(at) || time.Now().Before(at) {
		t.Fatalf("began %v ok %v, want at %v and not before", start, ok, at)
	}
	if (StartAt{}).UnixNs() != 0 || s.UnixNs() != at.UnixNano() {
		t.Error("UnixNs")
	}
}

// TestHelpSaysFlagsAsTheREADME: --help lists every flag with two dashes.
func TestHelpSaysFlagsAsTheREADME(t *testing.T) {
	fs := flag.NewFlagSet("run.sh", flag.ContinueOnError)
	fs.Duration("block", time.Millisecond, "how long the call blocks")
	fs.Bool("x", false, "a one-letter flag")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: run.sh [flags]"); fs.PrintDefaults() }
	var out strings.Builder
	if err := Parse(fs, []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, w := range []string{"\n  --block duration\n", "\n  --x\t", "how long the call blocks"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "\n  -block") {
		t.Errorf("help names a flag with one dash:\n%s", out.String())
	}
}

// TestSignalExitStatus: a command stopped by a signal exits as a shell
// says it: 130 for SIGINT, 143 for SIGTERM (128 + the signal).
func TestSignalExitStatus(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		parse := func([]string, io.Writer) (struct{}, error) { return struct{}{}, nil }
		code := Main(nil, io.Discard, parse, func(ctx context.Context, _ struct{}) int {
			_ = syscall.Kill(os.Getpid(), tc.sig)
			select {
			case <-ctx.Done():
				return 130 // interrupted, as every command says it
			case <-time.After(10 * time.Second):
				return 0
			}
		})
		if code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.sig, code, tc.want)
		}
	}
}

// TestFlagsOnly: a program's flag set prints its usage, then its flags,
// on --help, and refuses a positional argument in one line naming the
// program (every program's flags take this one road).
func TestFlagsOnly(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := Flags("poolserver", "Usage: poolserver [flags]\n\nServes from a pool.\n")
		fs.Int("slots", 200, "worker slots")
		return fs
	}
	var stderr strings.Builder
	if err := ParseOnly(newFS(), []string{"--help"}, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "Usage: poolserver [flags]\n\nServes from a pool.\n\nFlags:\n  --slots int") {
		t.Fatalf("--help printed %q", got)
	}
	stderr.Reset()
	err := ParseOnly(newFS(), []string{"--slots", "4", "extra"}, &stderr)
	if err == nil || err.Error() != `poolserver: unexpected argument "extra" (flags only; see --help)` || stderr.Len() != 0 {
		t.Fatalf("a positional argument: %v, printed %q", err, stderr.String())
	}
	fs := newFS()
	if err := ParseOnly(fs, []string{"--slots", "4"}, &stderr); err != nil || fs.Lookup("slots").Value.String() != "4" {
		t.Fatalf("--slots 4: %v", err)
	}
}
