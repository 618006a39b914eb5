package doccheck

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/stage"
)

// talkRecording is the committed stage run's recording, the one
// docs/talk.md times the talk by.
var talkRecording = filepath.Join(kitRoot, "docs", "talk-run", "stage.ndjson")

// talkFigures is how long the recording at path measured, by the names
// docs/talk.md marks its figures with (<!-- talk: NAME -->), from its
// frames' timestamps (ms since the stage began, a frame a quarter of a
// second apart):
//
//	screen-N         the seconds screen N measured: its steps, each from its start to its end ("38.3 s")
//	screen-N-steps   how many steps screen N measured ("6")
//	screen-N-slides  how many slides screen N has, those that measure nothing included ("5")
//	slide-N.M        the seconds the M-th slide of screen N measured ("9.5 s")
//	measured         the seconds all the steps measured
//	to-report        the seconds from the first screen to the report (done): --auto's beat after each slide included
func talkFigures(path string) (map[string]string, error) {
	frames, err := stage.Recording(path)
	if err != nil {
		return nil, err
	}
	type event struct {
		K      string `json:"k"`
		Screen int    `json:"screen"`
		ID     string `json:"id"`
		State  string `json:"state"`
	}
	type started struct {
		t      int64
		slide  string
		screen int
	}
	ms := map[string]int64{}
	count := map[string]int{}
	slides := map[int]int{}
	starts := map[string]started{}
	var slide string
	first, done := int64(-1), int64(-1)
	for _, b := range frames {
		var f struct {
			T      int64             `json:"t"`
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, err
		}
		for _, raw := range f.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, err
			}
			switch {
			case ev.K == "screen":
				slides[ev.Screen]++
				slide = fmt.Sprintf("slide-%d.%d", ev.Screen, slides[ev.Screen])
				if first < 0 {
					first = f.T
				}
			case ev.K == "step" && ev.State == "start":
				starts[ev.ID] = started{f.T, slide, ev.Screen}
			case ev.K == "step" && ev.State == "end":
				s, ok := starts[ev.ID]
				if !ok {
					return nil, fmt.Errorf("%s: step %s ends without a start", path, ev.ID)
				}
				delete(starts, ev.ID)
				d := f.T - s.t
				screen := fmt.Sprintf("screen-%d", s.screen)
				ms[screen] += d
				ms[s.slide] += d
				ms["measured"] += d
				count[screen+"-steps"]++
			case ev.K == "done":
				done = f.T
			}
		}
	}
	if first < 0 || done < 0 {
		return nil, fmt.Errorf("%s: a recording without a screen or its end (done)", path)
	}
	ms["to-report"] = done - first
	out := map[string]string{}
	for name, v := range ms {
		out[name] = fmt.Sprintf("%.1f s", math.Round(float64(v)/100)/10)
	}
	for name, n := range count {
		out[name] = fmt.Sprint(n)
	}
	for screen, n := range slides {
		out[fmt.Sprintf("screen-%d-slides", screen)] = fmt.Sprint(n)
	}
	return out, nil
}

// talkMarker is a figure's marker in docs/talk.md.
var talkMarker = regexp.MustCompile(`<!-- talk: ([a-z0-9.-]+) -->`)

// checkTalk gives every marked figure of doc that is not the recording's
// (figures), and every marker whose name the recording has no figure for;
// and how many markers there are.
func checkTalk(doc string, figures map[string]string) ([]string, int) {
	var bad []string
	marks := talkMarker.FindAllStringSubmatchIndex(doc, -1)
	for _, m := range marks {
		name := doc[m[2]:m[3]]
		before := strings.TrimRight(doc[:m[0]], "*_`")
		line := strings.Count(doc[:m[0]], "\n") + 1
		want, ok := figures[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("line %d: <!-- talk: %s -->: the recording has no figure of that name", line, name))
		case !strings.HasSuffix(before, want):
			tail := before[max(0, len(before)-20):]
			bad = append(bad, fmt.Sprintf("line %d: <!-- talk: %s -->: the recording says %q, the text before the marker is ...%q", line, name, want, tail))
		}
	}
	return bad, len(marks)
}

// TestTalkFigures: each figure docs/talk.md marks is the committed
// recording's; a copy with one changed, or a name the recording has not,
// fails.
func TestTalkFigures(t *testing.T) {
	figures, err := talkFigures(talkRecording)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(kitRoot, "docs", "talk.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	bad, n := checkTalk(doc, figures)
	for _, p := range bad {
		t.Errorf("docs/talk.md %s", p)
	}
	if n < 8 {
		t.Errorf("docs/talk.md marks %d figures of the recording, want each screen's and the whole's (8 or more)", n)
	}
	// Doctored: screen 1's figure changed, and a name the recording has not.
	want := figures["screen-1"] + "<!-- talk: screen-1 -->"
	if !strings.Contains(doc, want) {
		t.Fatalf("docs/talk.md does not say %q", want)
	}
	for _, tc := range []struct{ from, to, why string }{
		{want, "99.9 s<!-- talk: screen-1 -->", "the recording says \"" + figures["screen-1"] + "\""},
		{want, want + " 3 s<!-- talk: screen-9 -->", "no figure of that name"},
	} {
		bad, _ := checkTalk(strings.Replace(doc, tc.from, tc.to, 1), figures)
		if len(bad) != 1 || !strings.Contains(bad[0], tc.why) {
			t.Errorf("a copy with %q: %q, want one problem saying %q", tc.to, bad, tc.why)
		} else {
			t.Logf("a copy with %q: %s", tc.to, bad[0])
		}
	}
}

// TestTalkFiguresComputed: the figures of a recording made up here, where
// each is known: two screens, the second of two slides, the first slide of
// which measures nothing.
func TestTalkFiguresComputed(t *testing.T) {
	frame := func(t0 int64, events ...string) string {
		return fmt.Sprintf(`{"seq":0,"t":%d,"events":[%s]}`, t0, strings.Join(events, ","))
	}
	step := func(id, state string, screen int) string {
		return fmt.Sprintf(`{"k":"step","id":%q,"state":%q,"screen":%d}`, id, state, screen)
	}
	lines := []string{
		`{"schema":"` + stage.Schema + `"}`,
		frame(250, `{"k":"hello"}`, `{"k":"screen","screen":1}`, step("a", "start", 1)),
		frame(2500, step("a", "end", 1), step("b", "start", 1)),
		frame(4750, step("b", "end", 1)),
		frame(5750, `{"k":"screen","screen":2}`),
		frame(6750, `{"k":"screen","screen":2}`, step("c", "start", 2)),
		frame(10000, step("c", "end", 2)),
		frame(10250, `{"k":"done"}`),
	}
	path := filepath.Join(t.TempDir(), "stage.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := talkFigures(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"screen-1": "4.5 s", "screen-1-steps": "2", "screen-1-slides": "1", "slide-1.1": "4.5 s",
		"screen-2": "3.3 s", "screen-2-steps": "1", "screen-2-slides": "2", "slide-2.2": "3.3 s",
		"measured": "7.8 s", "to-report": "10.0 s",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if v, ok := got["slide-2.1"]; ok {
		t.Errorf("slide-2.1, which measures nothing, has %q", v)
	}
}
