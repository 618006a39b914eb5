package request

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bystander-kit/bystander/internal/files"
)

// parseTargets reads a targets file's bytes (file names it, for errors and
// for its body files' directory) into its requests for the target at addr.
//
// Each line is trimmed of blanks at both ends (a file written on Windows
// reads the same). A blank line ends a target; a line whose first
// non-blank character is '#' is a comment, anywhere; a line whose first
// word is upper-case letters (vegeta's test) starts a target, ending the
// one before (vegeta then took it for a header when the one before had
// headers); in a target, a line starting with '@' names its body, after
// its headers and once; any other line is a header, Name: value.
func parseTargets(file string, data []byte, addr string) ([]Request, error) {
	text := strings.TrimPrefix(string(data), "\uFEFF") // a byte-order mark some editors write
	var (
		reqs  []Request
		total int
		cur   *target
	)
	bodies := map[string][]byte{} // a body file named by many targets is read once
	fail := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	end := func() error {
		if cur == nil {
			return nil
		}
		r, err := New(addr, cur.method, cur.target, cur.header, cur.body)
		if err != nil {
			return fail(cur.line, "%v", err)
		}
		r.Line = cur.line
		total += r.headLen() + len(r.Body)
		if total > MaxBytes {
			return fail(cur.line, "the requests up to this one come to over %d MiB as sent: that is the most the kit holds for one file", MaxBytes>>20)
		}
		reqs = append(reqs, r)
		cur = nil
		return nil
	}
	n := 0
	for text != "" {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		n++
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			if err := end(); err != nil {
				return nil, err
			}
		case line[0] == '#':
		case startsTarget(line):
			if err := end(); err != nil {
				return nil, err
			}
			if len(reqs) >= MaxRequests {
				return nil, fail(n, "more than %d requests in one file", MaxRequests)
			}
			method, path, err := requestLine(line, addr)
			if err != nil {
				return nil, fail(n, "%v", err)
			}
			cur = &target{line: n, method: method, target: path}
		case cur == nil:
			return nil, fail(n, "want a target's first line, METHOD URL (such as GET /health; upper case), after a blank line or at the start")
		case line[0] == '@':
			if err := cur.bodyFrom(n, line, file, bodies); err != nil {
				return nil, fail(n, "%v", err)
			}
		case cur.bodyLine > 0:
			return nil, fail(n, "a line after the body line (line %d): a target's headers come before its @FILE, and a blank line ends it", cur.bodyLine)
		default:
			if err := cur.headerFrom(n, line); err != nil {
				return nil, fail(n, "%v", err)
			}
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, &Error{File: file, Msg: "no request in it: want METHOD URL lines (vegeta's HTTP targets format), such as GET /health"}
	}
	return reqs, nil
}

// target is a request being read from a targets file.
type target struct {
	line               int
	method, target     string
	header             []Header
	body               []byte
	bodyLine, hostLine int
}

// bodyFrom reads line n, "@FILE", into t: its body, from the file named
// beside the targets file (bodies: those read already, each once).
func (t *target) bodyFrom(n int, line, file string, bodies map[string][]byte) error {
	name := strings.TrimSpace(line[1:])
	switch {
	case t.bodyLine > 0:
		return fmt.Errorf("a second body line: the target's body is already named on line %d", t.bodyLine)
	case name == "":
		return errors.New("'@' without a file: want @FILE, the body's file")
	case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return errors.New("a body file name with a control character in it")
	}
	path := bodyPath(file, name)
	b, ok := bodies[path]
	if !ok {
		var err error
		if b, err = files.ReadRegular(path, MaxBody); err != nil {
			return fmt.Errorf("body file %q cannot be read: %v", name, err)
		}
		bodies[path] = b
	}
	t.body, t.bodyLine = b, n
	return nil
}

// headerFrom reads line n, "Name: value", into t's headers.
func (t *target) headerFrom(n int, line string) error {
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		return errors.New("want a header line, Name: value (a new target starts with METHOD URL, upper case, best after a blank line)")
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if err := checkHeader(name, value); err != nil {
		return err
	}
	if strings.EqualFold(name, "host") {
		if t.hostLine > 0 {
			return fmt.Errorf("a second Host line (the first is line %d): a request has one Host", t.hostLine)
		}
		t.hostLine = n
	}
	if len(t.header) >= MaxHeaders {
		return fmt.Errorf("more than %d header lines in one target", MaxHeaders)
	}
	t.header = append(t.header, Header{Name: name, Value: value})
	return nil
}

// startsTarget says whether a trimmed line starts a target: its first word
// is upper-case ASCII letters (vegeta's `^[A-Z]+\s`, a lone word too, so
// that "GET" alone is said to lack its URL rather than taken for a header).
func startsTarget(line string) bool {
	i := 0
	for i < len(line) && 'A' <= line[i] && line[i] <= 'Z' {
		i++
	}
	return i > 0 && (i == len(line) || line[i] == ' ' || line[i] == '\t')
}
