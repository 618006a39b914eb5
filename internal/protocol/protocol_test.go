package protocol

import (
	"strings"
	"testing"
	"time"
)

func TestParseQuery(t *testing.T) {
	cases := []struct {
		raw     string
		want    Params
		wantErr string
	}{
		{"", Params{}, ""},
		{"block=5ms", Params{Block: Block(5 * time.Millisecond), HasBlock: true}, ""},
		{"delay=1s&block=0", Params{Delay: time.Second, HasDelay: true, HasBlock: true}, ""},
		{"x=1&block=1.5ms&y", Params{Block: Block(1500 * time.Microsecond), HasBlock: true}, ""},
		{"block=10s", Params{Block: Block(10 * time.Second), HasBlock: true}, ""},
		{"block=5%6Ds", Params{Block: Block(5 * time.Millisecond), HasBlock: true}, ""},
		{"block=abc", Params{}, "bad block"},
		{"block=5", Params{}, "bad block"},
		{"block=", Params{}, "bad block"},
		{"block=-1ms", Params{}, "negative"},
		{"delay=10.001s", Params{}, "above the server's --max-block 10s"},
		{"block=%zz", Params{}, "bad block"},
	}
	for _, c := range cases {
		got, err := ParseQuery([]byte(c.raw), DefaultMaxBlock)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: err %v, want one line with %q", c.raw, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.raw, got, err, c.want)
		}
	}
}

func TestRoutes(t *testing.T) {
	for _, r := range Routes {
		if RouteOf([]byte(r.String())) != r || r.Body() == "" {
			t.Errorf("route %v does not round-trip", r)
		}
	}
	for _, p := range []string{"/", "/fast/", "/FAST", "/slowly", ""} {
		if RouteOf([]byte(p)) != Unknown {
			t.Errorf("%q is a route", p)
		}
	}
}
