package doccheck

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
)

const root = "../.."

var update = flag.Bool("update", false, "write the committed runs' findings.json again from their data")

// quoting are the pages whose every throughput and factor is marked.
var quoting = []string{"README.md", "docs/experiment.md", "docs/your-server.md"}

// runs are the committed runs the docs quote, by marker source.
var runs = map[string]string{"run": "docs/run", "talk-run": "docs/talk-run", "shop-run": "docs/shop-run"}

func loadRuns(t *testing.T) Runs {
	t.Helper()
	files := map[string]string{}
	for source, dir := range runs {
		files[source] = filepath.Join(root, dir, "findings.json")
	}
	r, err := LoadRuns(files)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func read(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The committed runs' findings are what today's code makes of their data:
// a change to a figure's arithmetic shows here first, and -update writes
// them again (the docs' markers are then checked against the new figures).
func TestRunsFindingsCurrent(t *testing.T) {
	for _, dir := range runs {
		fd, err := findings.Read(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		got := prose.FaceJSON(fd)
		file := filepath.Join(root, dir, "findings.json")
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/findings.json is not what the code makes of the run today (go test ./internal/doccheck -update, then check the docs' figures)", dir)
		}
	}
}

// Every figure a page marks is its run's.
func TestPagesQuoteTheRuns(t *testing.T) {
	r := loadRuns(t)
	pages, _ := filepath.Glob(filepath.Join(root, "docs/*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	marked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		marked += len(marker.FindAllIndex(text, -1))
		for _, p := range Figures(string(text), r) {
			t.Errorf("%s %s", filepath.Base(page), p)
		}
	}
	if marked < 20 {
		t.Errorf("the docs mark %d figures: the markers are not being found", marked)
	}
}

// The pages a reader follows mark every throughput and factor they quote.
func TestPagesMarkEveryFigure(t *testing.T) {
	for _, page := range quoting {
		for _, p := range Unmarked(read(t, page)) {
			t.Errorf("%s %s", page, p)
		}
	}
}

// On a copy of the README with one quoted figure changed, the check fails;
// and a figure left unmarked is named.
func TestDoctoredFigureFails(t *testing.T) {
	r := loadRuns(t)
	text := read(t, "README.md")
	if p := Figures(text, r); len(p) != 0 {
		t.Fatalf("the README itself fails: %v", p)
	}
	m := regexp.MustCompile(`(\d)(\**<!-- run: )`).FindStringSubmatchIndex(text)
	if m == nil {
		t.Fatal("the README marks no figure of the run")
	}
	digit := text[m[2]:m[3]]
	other := "7"
	if digit == "7" {
		other = "3"
	}
	doctored := text[:m[2]] + other + text[m[3]:]
	if p := Figures(doctored, r); len(p) != 1 {
		t.Errorf("a figure changed from ...%s to ...%s: want one problem, got %v", digit, other, p)
	}
	line := "The loops made 766 req/s, 9.3x less after.\n"
	if p := Unmarked(line); len(p) != 2 {
		t.Errorf("two unmarked figures: got %v", p)
	}
	if p := Unmarked("The loops made 766 req/s<!-- not run: arithmetic -->, 9.3x<!-- run: x --> less.\n"); len(p) != 0 {
		t.Errorf("marked figures named: %v", p)
	}
	if p := Figures("766 req/s<!-- run: headline.nothing -->\n", r); len(p) != 1 || !strings.Contains(p[0].Text, "nothing") {
		t.Errorf("a path that does not resolve: got %v", p)
	}
}

func TestLookup(t *testing.T) {
	r := loadRuns(t)
	for spec, want := range map[string]string{
		"headline.servers[name=netty].published_throughput":                 "549 req/s",
		"servers[name=loop-gnet].nominal_ceiling_per_s":                     "800",
		"sweep[id=sweep-pool-c4].callers":                                   "4",
		"sweep[0].req_per_s.median | int":                                   "747",
		"sweep[0].req_per_s.median | 1":                                     "746.8",
		"published[what=/slow throughput, 5ms block&server=netty].this_run": "748 req/s",
		"stall[id=stall-netty-k2].stalled":                                  "6 of 12",
	} {
		got, _, err := value(r, "run", spec)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", spec, got, err, want)
		}
	}
	if _, _, err := value(r, "run", "sweep[0].req_per_s.median"); err == nil {
		t.Error("a fraction without a format: no error")
	}
}
