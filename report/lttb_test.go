package main

import (
	"math"
	"testing"
)

func TestLTTBKeepsPeaksAndEnds(t *testing.T) {
	var pts []point
	for i := range 100000 {
		y := 1 + math.Sin(float64(i)/500)
		if i == 77777 {
			y = 500 // one stall
		}
		pts = append(pts, point{float64(i), y})
	}
	out := lttb(pts, 4000)
	if len(out) != 4000 {
		t.Fatalf("%d points", len(out))
	}
	if out[0] != pts[0] || out[len(out)-1] != pts[len(pts)-1] {
		t.Fatal("the ends moved")
	}
	peak := false
	for i, p := range out {
		if i > 0 && p.X <= out[i-1].X {
			t.Fatal("x not increasing")
		}
		if p.Y == 500 {
			peak = true
		}
	}
	if !peak {
		t.Fatal("the stall was lost")
	}
	if got := lttb(pts[:10], 4000); len(got) != 10 {
		t.Fatal("a short series was changed")
	}
}
