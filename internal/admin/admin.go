// Package admin is the side door of every server in the kit: a net/http
// listener apart from the serving threads, so that it answers while they are
// blocked, with GET /stats (JSON from the server) and /debug/pprof.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Listen binds addr for the admin server; call Serve with the listener.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return ln, nil
}

// Route is a further page a server adds to its admin side.
type Route struct {
	Pattern string // as http.ServeMux takes it: "GET /lag"
	Handler http.Handler
}

// Handler serves /stats from stats(), the pprof pages and routes.
func Handler(stats func() any, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(stats())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// idleTimeout closes an admin connection that sent nothing for this long
// (a var for the test): the admin listener also serves pprof, and must not
// collect connections that nobody uses.
var idleTimeout = 30 * time.Second

// Serve answers on ln until ctx is done, then closes it.
func Serve(ctx context.Context, ln net.Listener, stats func() any, routes ...Route) error {
	srv := &http.Server{
		Handler:           Handler(stats, routes...),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    8 << 10,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin: %w", err)
	}
	return nil
}
