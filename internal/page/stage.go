package page

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"errors"
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
	// Talk is a recorded talk's frames, a line each, packed (gzip,
	// base64): the page then plays them from itself, with no server.
	Talk string
}

func writeStagePage(a Asset) ([]byte, error) {
	return writeStage(stagePage{Echarts: a.script(), Script: template.JS(stageJS)})
}

// ErrTalkNeedsEcharts is Talk's refusal of an Asset without echarts
// inlined. Talk's errors name no program: report --talk and a stage run of
// run.sh each say what to do in their own terms.
var ErrTalkNeedsEcharts = errors.New("a talk file needs echarts inlined, never loaded from a CDN")

// writeTalkPage is the stage page carrying a recorded talk (its frames,
// each a JSON line, as internal/stage reads a recording): one file that
// opens from disk with nothing fetched, so echarts must be inlined; never
// a CDN.
func writeTalkPage(a Asset, frames [][]byte) ([]byte, error) {
	if a.js == nil {
		return nil, fmt.Errorf("%w (%s)", ErrTalkNeedsEcharts, a.note)
	}
	if len(frames) == 0 {
		return nil, errors.New("the recording holds no frame")
	}
	packed := base64.StdEncoding.EncodeToString(pack(bytes.Join(frames, []byte("\n"))))
	return writeStage(stagePage{Echarts: a.script(), Script: template.JS(stageJS), Talk: packed})
}

func writeStage(p stagePage) ([]byte, error) {
	var b bytes.Buffer
	if err := stageTpl.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("the stage page: %w", err)
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
