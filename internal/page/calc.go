package page

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/words"
)

// calcTmpl is the ceiling calculator: plain inputs, computed in the page
// (page.js) with no network; presets carry this run's servers.
var calcTmpl = template.Must(template.New("calc").Parse(`<div id="calc" class="card">
<div class="calc-in">
<label>workers<input id="calc_workers" type="number" min="1" max="100000" step="1" value="{{.Workers}}"><small>loops, threads or database connections: the fewest</small></label>
<label>the slowest blocking call, ms<input id="calc_block" type="number" min="0.001" max="3600000" step="any" value="{{.BlockMs}}"><small>its duration on a bad day, the round trip included</small></label>
<label>peak traffic, requests/s<input id="calc_peak" type="number" min="0" max="100000000" step="any" value="{{.Peak}}"><small>what the service must serve at once</small></label>
<label>share of the ceiling reached, %<input id="calc_share" type="number" min="1" max="100" step="any" value="{{.Share}}"><small>this run's, measured: no server reaches all of it</small></label>
</div>
<p id="calc_out" class="calc-out" aria-live="polite"></p>
{{with .Presets}}<p class="calc-presets">From this run: {{range .}}<button type="button" class="calc-preset" data-workers="{{.Workers}}" data-block-ms="{{.BlockMs}}" data-share="{{.Share}}" title="{{.Title}}">{{.Server}}: {{.Words}}</button> {{end}}</p>{{end}}
</div>`))

type calcPreset struct {
	Server, Words, Title string
	Workers              int
	BlockMs, Share       string
}

// calcSection is the report's last chart: the article's arithmetic made
// usable, workers / the slowest call against peak traffic, with this run's
// measured share of its ceiling as the realistic factor.
func calcSection(f *findings.Findings) section {
	sec := section{ID: "calc", Title: "11. The ceiling in advance: your workers, your slowest call, your peak",
		Caption: "The arithmetic of this report, for your own service: the ceiling is workers / the slowest blocking call's duration, " +
			"the workers being whichever are fewest of the event loops, the threads, and the database connections behind them; " +
			"no server reaches all of it: the share starts at what this run's server reached where its workers bound it (a button per server sets its figures). " +
			"Type your own; nothing leaves this page. A call that slows tenfold divides the ceiling by ten, whatever the traffic did."}
	data := struct {
		Workers       int
		BlockMs, Peak string
		Share         string
		Presets       []calcPreset
	}{Workers: 4, BlockMs: "5", Peak: "1000", Share: "100"}
	for i, p := range f.Presets() {
		cp := calcPreset{Server: p.Server, Workers: p.Workers, BlockMs: words.Decimals(float64(p.Block) / 1e6), Share: "100",
			Words: fmt.Sprintf("%s, %s", prose.PresetWorkers(p), words.Ms(p.Block))}
		cp.Title = "no row of this run was bound by its workers: the share is left at 100 %"
		if p.AsIs {
			cp.Title = "measured as it is: the workers it behaves as and its call's own time, from its sweep; its ceiling is its plateau's, so the share is left at 100 %"
		}
		if p.Share > 0 {
			cp.Share = words.Decimals(math.Min(100, 100*p.Share))
			cp.Words += fmt.Sprintf(", %s %%", cp.Share)
			cp.Title = fmt.Sprintf("median share of its workers' ceiling over the %s they bound", words.Plural(p.Rows, "sweep row"))
		}
		if i == 0 {
			data.Workers, data.BlockMs, data.Share = cp.Workers, cp.BlockMs, cp.Share
		}
		data.Presets = append(data.Presets, cp)
	}
	var b bytes.Buffer
	if err := calcTmpl.Execute(&b, data); err != nil {
		sec.Missing = "the calculator could not be written: " + err.Error()
		return sec
	}
	sec.Element = template.HTML(b.String())
	return sec
}
