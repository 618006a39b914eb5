package main

import (
	"context"
	"net"
)

// engine is one event-loop library serving a server: it accepts the
// connections, gives the core a link for each (core.go) and declares the
// traits the core must work around. What it works around itself is in the
// files named for each workaround (gnet_accept.go, evio_wake.go, ...).
type engine interface {
	// serve listens on addr and serves until ctx is done; ready is called
	// with the bound address once connections are accepted.
	serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error
	traits() traits
}

// engineOf makes the engine --engine names.
var engineOf = map[string]func() engine{
	"gnet": func() engine { return &gnetEngine{} },
	"evio": func() engine { return &evioEngine{} },
	"nbio": func() engine { return &nbioEngine{} },
}
