package client

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/bystander-kit/bystander/internal/request"
)

// Where a tool connects, and what it refuses to.

// Target is a parsed http:// URL: where to connect and what to ask for.
type Target struct {
	Addr          string // host:port
	RequestTarget string // path and query
}

// ParseTarget reads an http:// URL. Unless allowRemote, the host must be a
// loopback address or localhost: the kit loads its own machine only.
func ParseTarget(raw string, allowRemote bool) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", redact(raw), err)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), ErrCredentials)
	}
	if strings.EqualFold(u.Scheme, "https") {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), ErrHTTPS)
	}
	if u.Scheme != "http" || u.Host == "" {
		return Target{}, fmt.Errorf("client: target %q: want http://host:port/path", raw)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	if !allowRemote && !IsLoopback(host) {
		return Target{}, fmt.Errorf("client: target %q is not a loopback address: the kit loads this machine only", raw)
	}
	rt := u.EscapedPath()
	if rt == "" {
		rt = "/"
	}
	if u.RawQuery != "" {
		rt += "?" + u.RawQuery
	}
	addr := net.JoinHostPort(host, port)
	// What the request line will carry, checked as every request is: a
	// URL such as http://h/b?c d parses, and would send a malformed line.
	if _, err := request.New(addr, "GET", rt, nil, nil); err != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), err)
	}
	return Target{Addr: addr, RequestTarget: rt}, nil
}

// ErrCredentials refuses a URL with a user name or password in it: the kit
// sends none, and everything a run writes (results, run.json, the report)
// is made to be shared.
var ErrCredentials = errors.New("credentials in the URL are refused: the kit sends none, and a run's files are made to be shared; give the URL without user:password@")

// ErrHTTPS refuses an https:// URL, saying what to give instead.
var ErrHTTPS = errors.New("https:// is refused: the kit speaks plain HTTP/1.1 on loopback; give the service's plain http:// port (with TLS ended in front of it if it has to be)")

// redact hides what lies between "//" and the last "@" of an URL that
// does not parse, so that an error never repeats a password.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return raw
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = "xxxxx@" + host[i+1:]
	}
	if path != "" || strings.Contains(rest, "/") {
		host += "/" + path
	}
	return scheme + "//" + host
}

// IsLoopback says whether host (a name or an address) is this machine's
// loopback: localhost or a loopback IP.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
