package words

import (
	"testing"
	"time"
)

// TestWords pins each text the kit's pages, tables and findings.json say
// figures in: a change here changes every one of them.
func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Plural(1, "loop"), "1 loop"},
		{Plural(4, "loop"), "4 loops"},
		{Plural(0, "caller"), "0 callers"},
		{Plural(2, "entry"), "2 entries"},
		{Thousands(0), "0"},
		{Thousands(999.4), "999"},
		{Thousands(999.5), "1,000"},
		{Thousands(17189), "17,189"},
		{Thousands(1234567), "1,234,567"},
		{PerS(549.4), "549 req/s"},
		{PerS(17189), "17,189 req/s"},
		{Ints(nil, ","), ""},
		{Ints([]int{1, 2, 3}, ","), "1,2,3"},
		{Ints([]int{4}, ", "), "4"},
		{And(nil), ""},
		{And([]string{"a"}), "a"},
		{And([]string{"a", "b"}), "a and b"},
		{And([]string{"a", "b", "c"}), "a, b and c"},
		{Percents([]int{64, 100, 150}), "64 %, 100 % and 150 %"},
		{Dash(""), "-"},
		{Dash("3 of 12"), "3 of 12"},
		{Capital("loop 1 held"), "Loop 1 held"},
		{Capital(""), ""},
		{LowerFirst("The loop"), "the loop"},
		{LowerFirst(""), ""},
		{Decimals(5), "5"},
		{Decimals(5.1), "5.1"},
		{Decimals(5.125), "5.12"},
		{Decimals(100), "100"},
		{Decimals(0.001), "0"},
		{Ms(5120 * time.Microsecond), "5.12 ms"},
		{Ms(100 * time.Millisecond), "100 ms"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
