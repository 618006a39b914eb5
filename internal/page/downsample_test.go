package page

import (
	"math"
	"testing"
)

// TestPeaksKeepsEveryBucketMaximum: 100,000 points down to 4,000 keep the
// ends, stay in x order, and keep every spike, however narrow.
func TestPeaksKeepsEveryBucketMaximum(t *testing.T) {
	var pts []point
	spikes := map[float64]bool{}
	for i := range 100000 {
		y := 1 + math.Sin(float64(i)/500)
		if i%9973 == 77 {
			y = 500 + float64(i) // a stall, each of its own height
			spikes[y] = true
		}
		pts = append(pts, point{float64(i), y})
	}
	out := peaks(pts, 4000)
	if len(out) != 4000 {
		t.Fatalf("%d points", len(out))
	}
	if out[0] != pts[0] || out[len(out)-1] != pts[len(pts)-1] {
		t.Fatal("the ends moved")
	}
	for i, p := range out {
		if i > 0 && p.X <= out[i-1].X {
			t.Fatal("x not increasing")
		}
		delete(spikes, p.Y)
	}
	if len(spikes) != 0 {
		t.Fatalf("%d spikes lost", len(spikes))
	}
	if got := peaks(pts[:10], 4000); len(got) != 10 {
		t.Fatal("a short series was changed")
	}
}
