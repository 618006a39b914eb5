package main

import (
	"reflect"

	"github.com/tidwall/evio"
)

// evioUnsent is how many bytes evio still holds unsent for ec. It is
// called on the connection's loop, the only goroutine that touches them.
func evioUnsent(ec evio.Conn) int {
	if f, ok := evioField(ec, evioOut); ok {
		return f.Len()
	}
	return 0
}

// The two unexported fields of evio's connection the kit reads: its
// descriptor and its unsent output (evio v1.0.8 is pinned and
// unmaintained; TestEvioUnsentField fails if they move).
const (
	evioFD = iota
	evioOut
)

// evioField is field which (evioFD, evioOut) of ec's connection struct.
func evioField(ec evio.Conn, which int) (reflect.Value, bool) {
	if which == evioFD {
		return fieldOf(reflect.ValueOf(ec), "fd", reflect.Int)
	}
	return fieldOf(reflect.ValueOf(ec), "out", reflect.Slice)
}
