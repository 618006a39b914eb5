package findings

import "fmt"

// The figures' formats that findings' own sentences still use while they
// move to internal/prose, which has the same (num).

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
