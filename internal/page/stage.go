package page

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
)

// stagePage is the live view of run.sh --stage: five screens, one story
// each, fed by the frames of /events (internal/stage) and driven from the
// keyboard. It carries the same packed echarts as the report, so it works
// with no network at all.
type stagePage struct {
	Echarts template.HTML // asset.script
	Script  template.JS   // stage.js
}

func writeStagePage(a Asset) ([]byte, error) {
	p := stagePage{Echarts: a.script(), Script: template.JS(stageJS)}
	var b bytes.Buffer
	if err := stageTpl.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return b.Bytes(), nil
}

// The page's HTML and its script are files of their own, embedded, so they
// can be read, linted and diffed as what they are.
var (
	//go:embed stage.html
	stageHTML string
	//go:embed stage.js
	stageJS string

	stageTpl = template.Must(template.New("stage").Parse(stageHTML))
)
