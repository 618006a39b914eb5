package h1

import (
	"slices"
	"strings"
)

// BadRequest is a malformed request and the status a server must answer it
// with before closing the connection.
type BadRequest struct {
	Name   string
	Req    string
	Status int
}

// BadRequests is the malformed-input table every server of the kit is tested
// against (and the fuzzer's seed corpus). It is code, not test code, so that
// each server's tests send the same bytes.
func BadRequests() []BadRequest { return slices.Clone(badRequests) }

var badRequests = []BadRequest{

	{"no spaces", "GARBAGE\r\n\r\n", 400},
	{"method only", "GET\r\n\r\n", 400},
	{"no version", "GET /fast\r\nHost: a\r\n\r\n", 400},
	{"extra field", "GET /fast HTTP/1.1 x\r\nHost: a\r\n\r\n", 400},
	{"relative target", "GET fast HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"space in target", "GET /fa st HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"control in target", "GET /fa\x01st HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"HTTP/2.0", "GET /fast HTTP/2.0\r\nHost: a\r\n\r\n", 505},
	{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},
	{"asterisk target", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"HTTP/1.x", "GET /fast HTTP/1.x\r\nHost: a\r\n\r\n", 400},
	{"other protocol", "GET /fast FOO/1.1\r\nHost: a\r\n\r\n", 400},
	{"bad method char", "G@T /fast HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"long method", strings.Repeat("A", 40) + " /fast HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"binary", "\xff\xfe\xfd\x00\x01\r\n\r\n", 400},
	{"NUL in request line", "GET /fast\x00 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"header without colon", "GET /fast HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400},
	{"space in header name", "GET /fast HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 400},
	{"space before colon", "GET /fast HTTP/1.1\r\nHost : a\r\n\r\n", 400},
	{"empty header name", "GET /fast HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", 400},
	{"obsolete folding", "GET /fast HTTP/1.1\r\nHost: a\r\nX-A: b\r\n  c\r\n\r\n", 400},
	{"control in value", "GET /fast HTTP/1.1\r\nHost: a\r\nX-A: b\x01c\r\n\r\n", 400},
	{"no Host in 1.1", "GET /fast HTTP/1.1\r\nX-A: b\r\n\r\n", 400},
	{"two Hosts", "GET /fast HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
	{"header block over 8 KiB", "GET /fast HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 9000) + "\r\n\r\n", 431},
	{"request line over 8 KiB", "GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 431},
	{"too many headers", "GET /fast HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: b\r\n", 120) + "\r\n", 431},
	{"Content-Length letters", "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", 400},
	{"Content-Length negative", "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
	{"Content-Length conflict", "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
	{"Content-Length huge", "GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
	{"body over cap", "POST /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", 413},
	{"chunked body", "POST /fast HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 501},
	{"other transfer coding", "POST /fast HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
	{"empty lines only, too many", strings.Repeat("\r\n", 5000), 431},
}
