// Package htmlsafe makes text from a run directory or a recording safe where
// it lands in a page: inside a script, a string of a JavaScript program
// (echarts' options, built by go-echarts) must not be able to end the
// script or start markup, whatever a stranger's run.json put in it.
package htmlsafe

import (
	"fmt"
	"strings"
)

// ScriptStrings escapes, inside the string literals of the JavaScript
// program js, every character that could end a script element or be read
// as markup: < > & as \u003c \u003e \u0026, and the line separators U+2028
// and U+2029 (which end a line in older JavaScript). Outside strings the
// program is the kit's own code; finding "</" or "<!--" there is an error,
// not something to repair.
func ScriptStrings(js string) (string, error) {
	var b strings.Builder
	b.Grow(len(js) + len(js)/16)
	var quote rune // the quote of the string we are in, or 0
	escaped := false
	for i, r := range js {
		if quote == 0 {
			switch r {
			case '"', '\'', '`':
				quote = r
			case '<':
				if strings.HasPrefix(js[i:], "</") || strings.HasPrefix(js[i:], "<!--") {
					return "", fmt.Errorf("htmlsafe: %q outside a string at byte %d", js[i:min(len(js), i+12)], i)
				}
			}
			b.WriteRune(r)
			continue
		}
		// After a backslash the backslash is already written: the escape
		// goes on without one of its own ("\<" is "<").
		prefix := `\`
		switch {
		case escaped:
			escaped, prefix = false, ""
		case r == '\\':
			escaped = true
		case r == quote:
			quote = 0
		}
		switch r {
		case '<':
			b.WriteString(prefix + `u003c`)
		case '>':
			b.WriteString(prefix + `u003e`)
		case '&':
			b.WriteString(prefix + `u0026`)
		case '\u2028':
			b.WriteString(prefix + `u2028`)
		case '\u2029':
			b.WriteString(prefix + `u2029`)
		default:
			b.WriteRune(r)
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("htmlsafe: a string is not closed")
	}
	return b.String(), nil
}
