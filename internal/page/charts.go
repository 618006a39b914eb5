package page

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/htmlsafe"
	"github.com/bystander-kit/bystander/internal/prose"
)

// maxPoints bounds every series the page draws.
const maxPoints = 4000

// section is one chart (or table) of the page with its caption; Missing
// says why it could not be drawn.
type section struct {
	ID      string
	Title   string
	Caption string
	Element template.HTML
	Script  template.HTML
	Table   *costTable
	Grid    *grid // a plain table (the comparison)
	// Fold, when set, folds the table under a line that says this.
	Fold    string
	Missing string
	// Notes are said in words under the chart: saturation, censoring.
	Notes []string
}

// snippet renders a chart as its element and a script that registers the
// chart's drawing with the page instead of drawing at once: the page draws
// each chart as it nears the screen, so a long report opens at once.
//
// A patch, when given, is set on the chart after its options: options
// go-echarts has no field for (a log axis's startValue), as JSON.
func snippet(r render.Renderer, patch ...any) (template.HTML, template.HTML) {
	s := r.RenderSnippet()
	body := s.Script
	if i := strings.Index(body, ">"); i >= 0 && strings.HasPrefix(strings.TrimSpace(body), "<script") {
		body = body[i+1:]
	}
	body = strings.TrimSuffix(strings.TrimSpace(body), "</script>")
	id := chartID.FindStringSubmatch(s.Element)
	if id == nil {
		panic("report: a chart snippet without an id")
	}
	// go-echarts writes the options' JSON unescaped (JSONNotEscaped), and
	// server names come from a run directory, perhaps a stranger's: every
	// string in the script is escaped so that none can end it.
	safe, err := htmlsafe.ScriptStrings(body)
	if err != nil {
		panic("report: a chart's script: " + err.Error())
	}
	for _, p := range patch {
		js, err := json.Marshal(p)
		if err != nil || !strings.Contains(safe, "let goecharts_"+id[1]+" = ") {
			panic(fmt.Sprintf("report: a patch of chart %s: %v", id[1], err))
		}
		safe += strings.NewReplacer("{{ID}}", id[1], "{{PATCH}}", string(js)).Replace(strings.TrimSuffix(chartPatchJS, "\n"))
	}
	return template.HTML(s.Element), template.HTML(strings.NewReplacer("{{ID}}", id[1], "{{BODY}}", safe).Replace(strings.TrimSuffix(chartScriptHTML, "\n")))
}

// What registers a chart to be drawn as it nears the screen, and what sets
// a patch on it after its options: files of their own.
var (
	//go:embed chart_script.html
	chartScriptHTML string
	//go:embed chart_patch.js
	chartPatchJS string
)

var chartID = regexp.MustCompile(`id="([A-Za-z0-9_]+)"`)

// ms is a median in us as milliseconds for a log axis (never 0).
func ms(f findings.Figure) float64 { return max(round(f.Median()/1e3, 3), 0.001) }

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// serverNames lists the servers of groups in first-seen order.
func serverNames[R any](rows []R, g func(R) *findings.Group) []string {
	var names []string
	for _, r := range rows {
		if n := g(r).Step.Server.Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func groupsOf[R any](rows []R, g func(R) *findings.Group) []*findings.Group {
	var out []*findings.Group
	for _, r := range rows {
		out = append(out, g(r))
	}
	return out
}

func sweepGroup(r findings.SweepRow) *findings.Group { return r.Group }

func loadGroup(r findings.LoadRow) *findings.Group { return r.Group }

// claims is what the page says of the claims with ids: each claim with its
// figures where it held, that it did not hold where it did not.
func claims(f *findings.Findings, ids ...string) string {
	var out []string
	for _, id := range ids {
		if s := prose.ClaimSentence(f, f.Claim(id)); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// orNone is s, or none when s is empty.
func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

const censoredName = "unanswered when the window ended (a lower bound)"

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// missing says why a phase has nothing to show, from its groups.
func missing(gs []*findings.Group, phase string) string {
	for _, g := range gs {
		if why := prose.GroupWhy(g); why != "" {
			return fmt.Sprintf("the %s phase did not complete: %s", phase, why)
		}
	}
	if len(gs) == 0 {
		return fmt.Sprintf("the %s phase was not run (see --phases and --servers)", phase)
	}
	return fmt.Sprintf("the %s phase left no results", phase)
}
