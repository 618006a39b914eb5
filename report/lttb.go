package main

import "math"

// point is one (x, y) of a time series.
type point struct{ X, Y float64 }

// lttb reduces pts to at most n points with Largest-Triangle-Three-Buckets
// (Steinarsson 2013): the first and last points stay, and from each bucket
// the point that spans the largest triangle with its neighbours, which keeps
// peaks, the point of a latency chart. n < 3 or fewer points: unchanged.
func lttb(pts []point, n int) []point {
	if n >= len(pts) || n < 3 {
		return pts
	}
	out := make([]point, 0, n)
	out = append(out, pts[0])
	every := float64(len(pts)-2) / float64(n-2)
	a := 0
	for i := 0; i < n-2; i++ {
		// The next bucket's average is the third corner.
		nextStart := int(math.Floor(float64(i+1)*every)) + 1
		nextEnd := min(int(math.Floor(float64(i+2)*every))+1, len(pts))
		var ax, ay float64
		for _, p := range pts[nextStart:nextEnd] {
			ax += p.X
			ay += p.Y
		}
		cnt := float64(nextEnd - nextStart)
		ax, ay = ax/cnt, ay/cnt
		start := int(math.Floor(float64(i)*every)) + 1
		end := int(math.Floor(float64(i+1)*every)) + 1
		best, bestArea := start, -1.0
		for j := start; j < end; j++ {
			area := math.Abs((pts[a].X-ax)*(pts[j].Y-pts[a].Y) - (pts[a].X-pts[j].X)*(ay-pts[a].Y))
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		out = append(out, pts[best])
		a = best
	}
	return append(out, pts[len(pts)-1])
}
