package doccheck

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/words"
)

// Problem is one thing a page says that its data does not.
type Problem struct {
	Line int
	Text string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Text) }

// Runs are the findings a page's markers read, by the marker's source
// ("run", "talk-run").
type Runs map[string]any

// maxFindings bounds a findings.json read (docs/run's is 67 KB); a
// longer one is cut, and fails to decode.
const maxFindings = 8 << 20

// LoadRuns reads each source's findings.json.
func LoadRuns(paths map[string]string) (Runs, error) {
	runs := Runs{}
	for source, file := range paths {
		b, err := files.ReadCapped(file, maxFindings)
		if err != nil {
			return nil, fmt.Errorf("doccheck: %w", err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("doccheck: %s: %w", file, err)
		}
		runs[source] = v
	}
	return runs, nil
}

var (
	marker = regexp.MustCompile(`<!--\s*(run|[a-z]+-run|not run):\s*(.*?)\s*-->`)
	fence  = regexp.MustCompile("(?m)^\\s*```")
	code   = regexp.MustCompile("`[^`\n]*`")
	// figure is a throughput or a factor, the figures a reader compares.
	figure = regexp.MustCompile(`\b\d[\d,]*(?:\.\d+)?(?:\s?req/s\b|x\b)`)
)

// outsideCode is the page with fenced blocks blanked (their lines kept, so line
// numbers hold).
func outsideCode(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// Figures checks every marker of the page against runs.
func Figures(text string, runs Runs) []Problem {
	var out []Problem
	for i, line := range outsideCode(text) {
		for _, m := range marker.FindAllStringSubmatchIndex(line, -1) {
			source, spec := line[m[2]:m[3]], line[m[4]:m[5]]
			if source == "not run" {
				if spec == "" {
					out = append(out, Problem{i + 1, "a \"not run\" marker says not what the figure is"})
				}
				continue
			}
			before := strings.TrimRight(line[:m[0]], "*_` ")
			want, isNumber, err := value(runs, source, spec)
			if err != nil {
				out = append(out, Problem{i + 1, err.Error()})
				continue
			}
			if isNumber { // its unit is the page's
				before = unit.ReplaceAllString(before, "")
			}
			if !strings.HasSuffix(before, want) {
				out = append(out, Problem{i + 1, fmt.Sprintf("says %q where %s's %s is %q", tail(before), source, spec, want)})
			}
		}
	}
	return out
}

func tail(s string) string {
	if r := []rune(s); len(r) > 40 {
		return "..." + string(r[len(r)-40:])
	}
	return s
}

// unit is what may follow a number the docs quote, before its marker.
var unit = regexp.MustCompile(`\s?(req/s|ms|%|x|s|KB|MB)$`)

// value is the figure at spec ("PATH" or "PATH | FORMAT") as the docs
// write it, and whether it is a number (the page then gives its unit).
func value(runs Runs, source, spec string) (string, bool, error) {
	path, format, _ := strings.Cut(spec, "|")
	path, format = strings.TrimSpace(path), strings.TrimSpace(format)
	root, ok := runs[source]
	if !ok {
		return "", false, fmt.Errorf("no findings for %q", source)
	}
	v, err := lookup(root, path)
	if err != nil {
		return "", false, fmt.Errorf("%s: %s: %v", source, path, err)
	}
	switch v := v.(type) {
	case string:
		if format != "" {
			return "", false, fmt.Errorf("%s: %s is a string: no format", source, path)
		}
		return v, false, nil
	case float64:
		s, err := number(v, format, path)
		return s, true, err
	case bool:
		return strconv.FormatBool(v), false, nil
	}
	return "", false, fmt.Errorf("%s: %s is not a figure (%T)", source, path, v)
}

func number(v float64, format, path string) (string, error) {
	switch format {
	case "":
		if v != math.Trunc(v) {
			return "", fmt.Errorf("%s is %v: say \"| int\", \"| 1\" or \"| 2\"", path, v)
		}
		return words.Thousands(v), nil
	case "int":
		return words.Thousands(v), nil
	case "1", "2", "3":
		n, _ := strconv.Atoi(format)
		return strconv.FormatFloat(v, 'f', n, 64), nil
	}
	return "", fmt.Errorf("%s: unknown format %q (int, 1, 2, 3)", path, format)
}

// steps splits a path at its dots outside brackets: "a.b[k=1.5].c".
func steps(path string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range path {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == '.' && depth == 0:
			out = append(out, path[from:i])
			from = i + 1
		}
	}
	return append(out, path[from:])
}

var (
	step     = regexp.MustCompile(`^([^\[\]]+)((?:\[[^\]]*\])*)$`)
	selector = regexp.MustCompile(`\[([^\]]*)\]`)
)

// lookup walks path ("a.b[k=v].c[0]", "rows[what=x&server=y]") through
// decoded JSON.
func lookup(v any, path string) (any, error) {
	for _, part := range steps(path) {
		m := step.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("bad step %q", part)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q: not an object", m[1])
		}
		if v, ok = obj[m[1]]; !ok {
			return nil, fmt.Errorf("no %q", m[1])
		}
		for _, sel := range selector.FindAllStringSubmatch(m[2], -1) {
			var err error
			if v, err = pick(v, sel[1]); err != nil {
				return nil, fmt.Errorf("%s: %v", part, err)
			}
		}
	}
	return v, nil
}

// pick is the list element sel names: [N], or the first whose keys hold
// every value of [k=v&k2=v2].
func pick(v any, sel string) (any, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("[%s] on a non-list", sel)
	}
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 || n >= len(list) {
			return nil, fmt.Errorf("[%d] of %d", n, len(list))
		}
		return list[n], nil
	}
	conds := strings.Split(sel, "&")
	for _, c := range conds {
		if !strings.Contains(c, "=") {
			return nil, fmt.Errorf("[%s]: want [N] or [key=value&key=value]", sel)
		}
	}
next:
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for _, c := range conds {
			key, want, _ := strings.Cut(c, "=")
			if fmt.Sprint(obj[key]) != want {
				continue next
			}
		}
		return e, nil
	}
	return nil, fmt.Errorf("no element with %s", sel)
}

// Unmarked names each throughput or factor the page quotes outside code
// with no marker after it before the next figure.
func Unmarked(text string) []Problem {
	type token struct {
		line   int
		figure string
	}
	var toks []token
	for i, line := range outsideCode(text) {
		line = code.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		marks := marker.FindAllStringIndex(line, -1)
		// a figure inside a marker ("not run: 4 / 5 ms = 800 req/s") is not quoted
		bare := marker.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		figs := figure.FindAllStringIndex(bare, -1)
		for len(marks) > 0 || len(figs) > 0 {
			if len(figs) > 0 && (len(marks) == 0 || figs[0][0] < marks[0][0]) {
				toks = append(toks, token{i + 1, line[figs[0][0]:figs[0][1]]})
				figs = figs[1:]
				continue
			}
			toks = append(toks, token{i + 1, ""})
			marks = marks[1:]
		}
	}
	var out []Problem
	for j, t := range toks {
		if t.figure != "" && (j+1 == len(toks) || toks[j+1].figure != "") {
			out = append(out, Problem{t.line, fmt.Sprintf("%q has no marker: say which run's figure it is, or <!-- not run: why -->", t.figure)})
		}
	}
	return out
}
