package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/bystander-kit/bystander/internal/files"
)

// Caps on what is read of a run directory, which may come from a stranger:
// its run.json, and each file it names.
const (
	MaxRunBytes  = 16 << 20
	MaxFileBytes = 64 << 20
)

// ReadIn reads the file rel names in run directory dir (confined and capped:
// files.ReadIn) and decodes it strictly into v.
func ReadIn(dir, rel string, limit int64, v any) error {
	b, err := files.ReadIn(dir, rel, limit)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := decodeStrict(b, v); err != nil {
		return fmt.Errorf("results: %s: %w", rel, err)
	}
	return nil
}

// decodeStrict decodes one JSON value into v as the kit reads its files:
// no unknown field, every key spelled exactly as the schema does (Go's
// decoder would take "SCHEMA" for "schema"), nothing after the value, and
// no negative count or duration (only a loop may be -1: none).
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	var raw any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return err
	}
	if err := exactKeys(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	return nonNegative(reflect.ValueOf(v))
}

// pathError is a problem found at a place in the document; the place is
// built as the walk unwinds, so a document without one costs no strings.
type pathError struct {
	path []string // innermost first
	msg  string
}

func (e *pathError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	at := strings.TrimPrefix(b.String(), ".")
	if at == "" {
		at = "the document"
	}
	return at + ": " + e.msg
}

func within(err error, step func() string) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, step())
	}
	return err
}

var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// exactKeys checks that every key of every object in raw is a field of t
// spelled exactly as its json tag.
func exactKeys(raw any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch r := raw.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil // a map of the schema's own: its keys are data
		}
		fields, ok := fieldsOf.Load(t)
		if !ok {
			m := map[string]reflect.Type{}
			jsonFields(t, m)
			fields, _ = fieldsOf.LoadOrStore(t, m)
		}
		for k, val := range r {
			ft, ok := fields.(map[string]reflect.Type)[k]
			if !ok {
				return &pathError{path: []string{"." + k}, msg: "the key is not spelled as the schema spells it"}
			}
			if err := exactKeys(val, ft); err != nil {
				return within(err, func() string { return "." + k })
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for i, val := range r {
			if err := exactKeys(val, t.Elem()); err != nil {
				return within(err, func() string { return fmt.Sprintf("[%d]", i) })
			}
		}
	}
	return nil
}

// jsonFields maps the json names of t's fields (embedded structs' too) to
// their types.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

// nonNegative refuses a negative integer anywhere in v, but -1 in a field
// named Loop or ContinuationLoop ("no loop"): counts, durations in ns,
// sizes and times are never negative.
func nonNegative(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nonNegative(v.Elem())
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if (f.Name == "Loop" || f.Name == "ContinuationLoop") && fv.CanInt() && fv.Int() == -1 {
				continue
			}
			if err := nonNegative(fv); err != nil {
				return within(err, func() string {
					name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					switch {
					case f.Anonymous && name == "":
						return "" // an embedded struct's fields are its parent's
					case name == "":
						name = f.Name
					}
					return "." + name
				})
			}
		}
	case reflect.Slice, reflect.Array:
		if k := v.Type().Elem().Kind(); k == reflect.String || k == reflect.Float64 || k == reflect.Bool {
			return nil
		}
		for i := range v.Len() {
			if err := nonNegative(v.Index(i)); err != nil {
				return within(err, func() string { return fmt.Sprintf("[%d]", i) })
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return &pathError{msg: fmt.Sprintf("%d: a count, size, time or duration is never negative", v.Int())}
		}
	}
	return nil
}
