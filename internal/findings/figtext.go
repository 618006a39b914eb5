package findings

import "fmt"

// The figures' formats that findings' own sentences still use while they
// move to internal/prose, which has the same (num, ms, perS, pct).

// num formats the median of v with the spread when there are several.
func num(v Figure, format string) string {
	if !v.OK() {
		return "-"
	}
	s := fmt.Sprintf(format, v.Median())
	if len(v) > 1 {
		lo, hi := v.Spread()
		s += fmt.Sprintf(" ["+format+"-"+format+"]", lo, hi)
	}
	return s
}

// ms formats a figure in us as milliseconds.
func ms(v Figure) string {
	out := make(Figure, len(v))
	for i, x := range v {
		out[i] = x / 1e3
	}
	return num(out, "%.1fms")
}

// perS is answers per second: whole above 100, one decimal below.
func perS(v Figure) string {
	if v.OK() && v.Median() < 100 {
		return num(v, "%.1f")
	}
	return num(v, "%.0f")
}

// pct is a share as a whole percentage.
func pct(v Figure) string {
	out := make(Figure, len(v))
	for i, x := range v {
		out[i] = 100 * x
	}
	return num(out, "%.0f%%")
}
