// Package words says figures in English: numbers with their units and
// commas, plurals, lists joined with commas and "and". It computes
// nothing: the figures are internal/findings', and every text of the kit
// (the report, the terminal's tables, findings.json's text fields, the
// experiment's plan) says them with these, so one figure reads the same
// wherever it is shown.
package words

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Plural is "1 loop", "4 loops", "2 entries".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Thousands writes a whole number with commas, as the publication does:
// "17,189".
func Thousands(v float64) string {
	n := int64(v + 0.5)
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// PerS is a throughput in whole requests per second: "17,189 req/s".
func PerS(v float64) string { return Thousands(v) + " req/s" }

// Ints writes v with sep between: "1,2,3".
func Ints(v []int, sep string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, sep)
}

// And is "a", "a and b", "a, b and c" ("" for none).
func And(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " and " + v[len(v)-1]
}

// Percents is "64 %, 100 % and 150 %".
func Percents(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%d %%", x)
	}
	return And(parts)
}

// Dash is s, or "-" for a table's empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Capital is s with its first letter upper-case.
func Capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// LowerFirst is s with its first letter lower-case.
func LowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// Decimals is v with at most 2 decimals and no trailing zeros: "5.1".
func Decimals(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// Ms is a duration in ms with 2 decimals at most: "5.12 ms".
func Ms(d time.Duration) string {
	return Decimals(d.Seconds()*1e3) + " ms"
}

// Round rounds a duration for reading, to three figures or so: 0.1ms
// from 10ms, 10us from 0.1ms, 1us below ("34.2ms", "1.01ms", "320us").
func Round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
