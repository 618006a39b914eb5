package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bystander-kit/bystander/internal/accept"
	"github.com/bystander-kit/bystander/internal/h1"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// fasthttpEngine serves on valyala/fasthttp as it comes: its default
// worker pool (Concurrency 256 Ki: a worker goroutine serves one
// connection at a time, its requests one after another), its own request
// parser. Only what the protocol refuses and fasthttp accepts is refused
// here, with the protocol's statuses.
type fasthttpEngine struct{}

func (e *fasthttpEngine) serve(ctx context.Context, s *server, ln net.Listener) error {
	o := s.opts
	srv := &fasthttp.Server{
		Handler:               func(rc *fasthttp.RequestCtx) { s.fasthttp(rc) },
		NoDefaultServerHeader: true,
		NoDefaultDate:         true, // as the kit's other servers: no Date, no time formatting per answer
		ReadBufferSize:        h1.MaxHeaderBytes,
		MaxRequestBodySize:    h1.MaxBodyBytes,
		// The line and headers within HeaderTimeout of the first byte; a
		// promised body within BodyTimeout of the headers (one ReadTimeout
		// for both gave a slow header HeaderTimeout + BodyTimeout).
		ReadTimeout:     o.HeaderTimeout,
		HeaderReceived:  bodyTimeout(o.BodyTimeout),
		IdleTimeout:     o.IdleTimeout,
		CloseOnShutdown: true,
		// fasthttp logs every malformed request; the kit's servers answer
		// them and say nothing (/stats counts what was refused).
		Logger: quiet{},
	}
	served := make(chan error, 1)
	// Out of descriptors, fasthttp's Serve returns ("accept4: too many
	// open files") and the process exited: accept waits it out instead.
	go func() { served <- srv.Serve(accept.Patient(ln, s.opts.log, "goserver")) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Handlers may be inside a long block: give them a moment, then go.
	sctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = srv.ShutdownWithContext(sctx)
	ln.Close()
	select {
	case <-served:
	case <-time.After(time.Second):
	}
	return nil
}

// fasthttp answers one request on fasthttp's worker goroutine.
func (s *server) fasthttp(rc *fasthttp.RequestCtx) {
	start := time.Now()
	if e := fasthttpRefusal(&rc.Request.Header); e != nil {
		s.refused.Add(1)
		rc.SetConnectionClose()
		writeFasthttp(rc, e.Status, e.Reason+"\n")
		return
	}
	path := rc.Path()
	s.byRoute[protocol.RouteOf(path)].Add(1)
	a := s.routes.Serve(rc, rc.Method(), path, rc.URI().QueryString(), start, nil)
	if a.Gone {
		rc.SetConnectionClose()
		return
	}
	for _, x := range a.Headers {
		rc.Response.Header.Set(x.Name, strconv.FormatInt(x.Value, 10))
	}
	writeFasthttp(rc, a.Status, a.Body)
}

// fasthttpRefusal is what fasthttp accepts but the protocol refuses, with
// the status the kit's decoder gives (internal/h1).
func fasthttpRefusal(h *fasthttp.RequestHeader) *h1.Error {
	switch {
	case len(h.Method()) > h1.MaxMethod:
		return h1.ErrMethod
	case string(h.RequestURI()) == "*":
		// OPTIONS *: the protocol's endpoints are paths.
		return h1.ErrTarget
	case h.Len() > h1.MaxHeaders:
		return h1.ErrTooManyHeaders
	}
	if te := h.Peek("Transfer-Encoding"); len(te) > 0 {
		if bytes.EqualFold(te, []byte("chunked")) {
			return h1.ErrChunked
		}
		return h1.ErrTransferEncoding
	}
	return nil
}

func writeFasthttp(rc *fasthttp.RequestCtx, status int, body string) {
	rc.SetStatusCode(status)
	rc.SetContentType("text/plain; charset=utf-8")
	rc.SetBodyString(body)
}

// bodyTimeout gives a request that promises a body BodyTimeout from its
// headers to send it (fasthttp's ReadTimeout, HeaderTimeout here, bounds
// the line and headers); 0 means none, as for the kit's other servers.
func bodyTimeout(body time.Duration) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	if body <= 0 {
		body = 24 * time.Hour
	}
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if h.ContentLength() == 0 {
			return fasthttp.RequestConfig{}
		}
		return fasthttp.RequestConfig{ReadTimeout: body}
	}
}

// quiet is a fasthttp.Logger that says nothing.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
