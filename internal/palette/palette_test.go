package palette

import "testing"

func TestOf(t *testing.T) {
	got := Of([]Server{{"loop", "loop"}, {"pool", "pool"}, {"netty", "loop"}, {"tomcat", "pool"}, {"node", ""}, {"loop", "loop"}})
	want := map[string]string{"loop": Loops[0], "netty": Loops[1], "pool": Pools[0], "tomcat": Pools[1], "node": Others[0]}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	// More servers of a kind than hues: they cycle, and none is left out.
	var many []Server
	for i := range 2*len(Loops) + 1 {
		many = append(many, Server{string(rune('a' + i)), "loop"})
	}
	if m := Of(many); m["a"] != m[string(rune('a'+len(Loops)))] || len(m) != len(many) {
		t.Errorf("cycling: %v", m)
	}
}

func TestTint(t *testing.T) {
	for _, c := range []struct {
		hue   string
		share float64
		want  string
	}{{"#000000", 0, "#000000"}, {"#000000", 1, "#ffffff"}, {"#000000", 0.5, "#808080"}, {"#d62728", 0, "#d62728"}, {"#d62728", 2, "#ffffff"}, {"red", 0.5, "red"}} {
		if got := Tint(c.hue, c.share); got != c.want {
			t.Errorf("Tint(%s, %v) = %s, want %s", c.hue, c.share, got, c.want)
		}
	}
}
