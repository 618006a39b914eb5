package htmlsafe

import (
	"strings"
	"testing"
)

func TestScriptStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`let o = {"name":"</script><script>alert(1)</script>"};`, `let o = {"name":"\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e"};`},
		{`x = 'a & b' + "<!--" + ` + "`<b>`", `x = 'a \u0026 b' + "\u003c!--" + ` + "`\\u003cb\\u003e`"},
		{`s = "quote \" then <"`, `s = "quote \" then \u003c"`},
		{`s = "\<"`, `s = "\u003c"`},
		{"s = \"line\u2028sep\"", `s = "line\u2028sep"`},
		{`if (a > b && c) {}`, `if (a > b && c) {}`}, // the kit's own code, outside strings
	} {
		got, err := ScriptStrings(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ScriptStrings(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if strings.Contains(got[strings.Index(got, "=")+1:], "</") {
			t.Errorf("%q still ends a script", got)
		}
	}
	for _, bad := range []string{`a </script>`, `x = 1; <!-- y`, `s = "unclosed`} {
		if _, err := ScriptStrings(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
