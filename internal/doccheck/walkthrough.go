package doccheck

import (
	"regexp"
	"strings"
)

// Walkthrough is the shell a page gives under one name: every fenced block
// right after a <!-- walkthrough: NAME --> line, in order.
type Walkthrough struct {
	Name  string
	Line  int // the first block's first line
	Shell string
}

var walkMark = regexp.MustCompile(`^<!--\s*walkthrough:\s*([\w.-]+)\s*-->\s*$`)

// Walkthroughs gives the page's walk-throughs in the order they first
// appear.
func Walkthroughs(text string) []Walkthrough {
	lines := strings.Split(text, "\n")
	var out []Walkthrough
	index := map[string]int{}
	for i := 0; i+1 < len(lines); i++ {
		m := walkMark.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil || !fence.MatchString(lines[i+1]) {
			continue
		}
		var block []string
		j := i + 2
		for ; j < len(lines) && !fence.MatchString(lines[j]); j++ {
			block = append(block, lines[j])
		}
		k, ok := index[m[1]]
		if !ok {
			k = len(out)
			index[m[1]] = k
			out = append(out, Walkthrough{Name: m[1], Line: i + 3})
		}
		out[k].Shell += strings.Join(block, "\n") + "\n"
		i = j
	}
	return out
}

var runSh = regexp.MustCompile(`(?m)^(\s*\./run\.sh\b)([^\n#]*)`)

// Quick adds --quick to every ./run.sh line of shell that lacks it: the
// walk-through as written, its measurements short.
func Quick(shell string) string {
	return runSh.ReplaceAllStringFunc(shell, func(line string) string {
		if strings.Contains(line, "--quick") {
			return line
		}
		m := runSh.FindStringSubmatch(line)
		return m[1] + " --quick" + m[2]
	})
}
