package page

// point is one (x, y) of a time series.
type point struct{ X, Y float64 }

// peaks reduces pts (in x order) to at most n points for drawing: the
// series is cut into n - 2 buckets of consecutive points and each bucket
// keeps its highest point; the first and last points stay. A latency spike
// is the highest point of its bucket, so it is never lost, whatever the
// length of the run. n < 3 or fewer points than n: unchanged. Only the
// page downsamples: the results keep every probe.
func peaks(pts []point, n int) []point {
	if n >= len(pts) || n < 3 {
		return pts
	}
	out := make([]point, 0, n)
	out = append(out, pts[0])
	inner := pts[1 : len(pts)-1]
	buckets := n - 2
	for b := range buckets {
		lo, hi := b*len(inner)/buckets, (b+1)*len(inner)/buckets
		if lo == hi {
			continue
		}
		best := lo
		for i := lo + 1; i < hi; i++ {
			if inner[i].Y > inner[best].Y {
				best = i
			}
		}
		out = append(out, inner[best])
	}
	return append(out, pts[len(pts)-1])
}
