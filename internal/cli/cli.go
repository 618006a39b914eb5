// Package cli is how every command of the kit starts: the flags are parsed
// once, --help exits 0, a bad flag is one line on stderr and exit status 2,
// and the work runs under a context that SIGINT and SIGTERM cancel, so each
// command can stop cleanly and say what it had done.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Main parses args with parse, then runs run and returns its exit status.
func Main[O any](args []string, stderr io.Writer, parse func([]string, io.Writer) (O, error), run func(context.Context, O) int) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got atomic.Value
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	code := run(ctx, o)
	// Interrupted (130, as every command says it) by SIGTERM: 143, as a
	// shell reports a process that SIGTERM ended (128 + 15).
	if s, _ := got.Load().(os.Signal); code == 130 && s == syscall.SIGTERM {
		return 128 + int(syscall.SIGTERM)
	}
	return code
}

// Flags is a program's flag set, named for the program: --help prints
// usage (its "Usage: ..." lines and what it does), then "Flags:" and the
// flags.
func Flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", strings.TrimRight(usage, "\n"))
		fs.PrintDefaults()
	}
	return fs
}

// ParseOnly parses args into fs as Parse does, and refuses a positional
// argument: the kit's programs take flags only.
func ParseOnly(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := Parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (flags only; see --help)", fs.Name(), fs.Arg(0))
	}
	return nil
}

// Parse parses args into fs. --help prints the usage on stderr and
// returns flag.ErrHelp; a bad flag or value is one line, naming the
// program and pointing at --help, never the whole usage.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	var usage strings.Builder
	fs.SetOutput(&usage)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, helpFlag.ReplaceAllString(usage.String(), "$1--$2"))
		return err
	case err != nil:
		return fmt.Errorf("%s: %s (see --help)", fs.Name(), say(fs, err))
	}
	return nil
}

var (
	// helpFlag is a flag as the flag package's usage lists it, "  -block":
	// the help says it with two dashes, as the README and the errors do.
	helpFlag  = regexp.MustCompile(`(?m)^(  )-(\w)`)
	badValue  = regexp.MustCompile(`^invalid value ("[^"]*") for flag -([\w-]+): (.*)$`)
	undefined = regexp.MustCompile(`^flag provided but not defined: -+([\w-]+)$`)
	noArg     = regexp.MustCompile(`^flag needs an argument: -+([\w-]+)$`)
	// userinfo is a URL's user:password@, never repeated in an error.
	userinfo = regexp.MustCompile(`(//)[^/@\s"]*@`)
)

// say rewords the flag package's errors as the README speaks: flags with
// two dashes, and for a value that does not parse, the form it wants.
func say(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if why == "parse error" {
			why = "want " + wants(fs.Lookup(m[2]))
		}
		return fmt.Sprintf("--%s %s: %s", m[2], userinfo.ReplaceAllString(m[1], "${1}xxxxx@"), why)
	}
	if m := undefined.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s is not defined", m[1])
	}
	if m := noArg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	return msg
}

// wants says what form a flag's value takes.
func wants(f *flag.Flag) string {
	if f == nil {
		return "another value"
	}
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue":
		return "a Go duration such as 5ms, 250us or 1.5s"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "a whole number"
	case "*flag.float64Value":
		return "a number"
	case "*flag.boolValue":
		return "true or false"
	}
	return "another value"
}

// StartAt is the --start-at flag of the measuring tools: the wall-clock
// moment their run's clock starts, so that tools started as separate
// processes (the load and its bystander prober) share one measured window.
// Zero means "as soon as the connections are open".
type StartAt struct{ T time.Time }

func (s *StartAt) String() string {
	if s == nil || s.T.IsZero() {
		return ""
	}
	return s.T.UTC().Format(time.RFC3339Nano)
}

// Set reads an RFC 3339 time (fractions allowed) within a minute of now.
func (s *StartAt) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time such as %s", time.Now().UTC().Add(time.Second).Format(time.RFC3339Nano))
	}
	if d := time.Until(t); d < -time.Minute || d > time.Minute {
		return fmt.Errorf("%s is %s from now: want within a minute", v, d.Round(time.Second))
	}
	s.T = t
	return nil
}

// Begin waits until the start (when one was given and is ahead) and
// returns the run's start: the given moment, or now when none was given or
// it has already passed (the caller records both). It returns false when
// ctx ended first.
func (s StartAt) Begin(ctx context.Context) (time.Time, bool) {
	if s.T.IsZero() || !time.Now().Before(s.T) {
		return time.Now(), ctx.Err() == nil
	}
	t := time.NewTimer(time.Until(s.T))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return time.Now(), false
	case <-t.C:
		return s.T, true
	}
}

// Late is how long after the given moment the clock really started (0
// when none was given or it started on time): a tool that could not be
// ready in time starts its clock, and its window, that much later.
func (s StartAt) Late(start time.Time) time.Duration {
	if s.T.IsZero() || !start.After(s.T) {
		return 0
	}
	return start.Sub(s.T)
}

// UnixNs is the moment in Unix nanoseconds, 0 when none was given.
func (s StartAt) UnixNs() int64 {
	if s.T.IsZero() {
		return 0
	}
	return s.T.UnixNano()
}
