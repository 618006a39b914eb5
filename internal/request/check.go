package request

import (
	"errors"
	"fmt"
	"strings"
)

// What a request may say: its method, its target and its headers, each
// checked before anything is sent.

// checkMethod: upper-case letters (vegeta's rule, and every registered
// method but a few with a '-'), at most MaxMethod; CONNECT is a tunnel,
// not a request.
func checkMethod(m string) error {
	switch {
	case m == "":
		return errors.New("no method: " + usage)
	case len(m) > MaxMethod:
		return fmt.Errorf("a method of %d characters, over %d", len(m), MaxMethod)
	case m == "CONNECT":
		return errors.New("CONNECT opens a tunnel: the kit sends requests")
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; c < 'A' || c > 'Z' {
			if up := strings.ToUpper(m); isUpperWord(up) {
				return fmt.Errorf("method %q: methods are upper case (%s)", short(m), up)
			}
			return fmt.Errorf("method %q: want upper-case letters, such as GET or POST", short(redact(m)))
		}
	}
	return nil
}

func isUpperWord(s string) bool {
	if s == "" || len(s) > MaxMethod {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// checkTarget: an origin-form target, /path?query, of printable ASCII
// with well-formed percent escapes; no fragment (it is never sent).
func checkTarget(t string) error {
	if t == "" || t[0] != '/' {
		return fmt.Errorf("path %q: want a path starting with '/', such as /health", short(redact(t)))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '#':
			return fmt.Errorf("path %q holds a fragment (#...): it is never sent; leave it out", short(t))
		case c == ' ':
			return fmt.Errorf("path %q holds a space: percent-encode it (%%20)", short(t))
		case c < ' ' || c == 0x7f:
			return fmt.Errorf("path %q holds a control character", short(t))
		case c > 0x7f:
			return fmt.Errorf("path %q holds a character outside ASCII: percent-encode it", short(t))
		case c == '%':
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) {
				return fmt.Errorf("path %q holds a '%%' that is not a percent-escape (%%XX in hex): write %%25 for '%%'", short(t))
			}
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkHeader: a token for a name, a value without control characters, and
// none of the headers that frame the request or its connection (the kit's
// to send). Its errors never repeat a value: it may be a credential.
func checkHeader(name, value string) error {
	if name == "" {
		return errors.New("a header line without a name: want Name: value")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			// Only what comes before the bad character: a line such as
			// "Authorization Bearer a:b" must not be repeated.
			return fmt.Errorf("header name %q, then %q: a name holds letters, digits and !#$%%&'*+-.^_`|~ only, then ':' and the value", short(name[:i]), name[i:i+1])
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("header %s: its value holds a control character", name)
		}
	}
	switch strings.ToLower(name) {
	case "content-length":
		return errors.New("a Content-Length line: the kit sends it, the @FILE body's size")
	case "transfer-encoding":
		return errors.New("a Transfer-Encoding line is refused: the kit sends a body whole, with Content-Length")
	case "connection":
		if !strings.EqualFold(strings.TrimSpace(value), "keep-alive") {
			return errors.New("a Connection line other than keep-alive: the kit keeps its connections open (HTTP/1.1's default); leave the line out")
		}
	case "upgrade":
		return errors.New("an Upgrade line is refused: the kit speaks HTTP/1.1 on its connections")
	case "expect":
		return errors.New("an Expect line is refused: the kit sends a body with its request, without waiting for 100 Continue")
	case "host":
		if value == "" || strings.ContainsAny(value, " \t/@") {
			return errors.New("a Host line: want a host name and port, such as api.example:8080 (the connection still goes to the target)")
		}
	}
	return nil
}

// isTokenChar: a tchar of RFC 9110.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
