package main

import (
	"reflect"
	"sync"
)

// The kit reads a few unexported fields of evio's and nbio's connections
// (their descriptors, unsent output and epoll sets: neither library says
// them, and both are pinned; tests fail if a field moves). fieldOf looks a
// field up by name once per struct type, and by index after that (about
// 40 ns a read; evio's unsent output is read at every callback): evio's
// connection type is unexported, so it is known only from a value. nbio's
// unsent bytes, read as often, keep an index found once from its exported
// type (nbioLeft, about 6 ns a read).

// fieldIndex caches a struct type's field index by name (-1: none, or not
// a field of the struct itself).
var fieldIndex sync.Map // fieldKey -> int

type fieldKey struct {
	t    reflect.Type
	name string
}

// fieldOf is field name of the struct v points to, of kind kind; false if
// v is not a non-nil pointer to a struct with such a field.
func fieldOf(v reflect.Value, name string, kind reflect.Kind) (reflect.Value, bool) {
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	v = v.Elem()
	k := fieldKey{v.Type(), name}
	i, ok := fieldIndex.Load(k)
	if !ok {
		idx := -1
		if f, ok := v.Type().FieldByName(name); ok && len(f.Index) == 1 {
			idx = f.Index[0]
		}
		i, _ = fieldIndex.LoadOrStore(k, idx)
	}
	if i.(int) < 0 || v.Field(i.(int)).Kind() != kind {
		return reflect.Value{}, false
	}
	return v.Field(i.(int)), true
}
