package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The docs are kept true to the code, as benchstat keeps its own: every
// flag a program's --help lists is in the page that documents the
// program, every package of the module is in the layout, and every link
// between the README and the docs leads to a file that exists.

const root = "../../.."

// documented is where each program's flags are written up.
var documented = map[string]string{
	"./internal/cmd/experiment": "docs/experiment.md",
	"./loopserver":              "docs/programs.md",
	"./poolserver":              "docs/programs.md",
	"./goserver":                "docs/programs.md",
	"./loadgen":                 "docs/programs.md",
	"./prober":                  "docs/programs.md",
	"./report":                  "docs/programs.md",
}

var flagLine = regexp.MustCompile(`(?m)^  --?([a-z][a-z0-9-]*)`)

func TestDocsFlags(t *testing.T) {
	bin := t.TempDir()
	args := []string{"build", "-o", bin + "/"}
	for pkg := range documented {
		args = append(args, pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for pkg, doc := range documented {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		help, _ := exec.Command(filepath.Join(bin, filepath.Base(pkg)), "--help").CombinedOutput()
		flags := flagLine.FindAllStringSubmatch(string(help), -1)
		if len(flags) < 3 {
			t.Fatalf("%s --help lists %d flags: %s", pkg, len(flags), help)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f[1]) + `\b[^-]`).Match(text) {
				t.Errorf("%s --%s is in its --help and not in %s", filepath.Base(pkg), f[1], doc)
			}
		}
	}
}

func TestDocsLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "github.com/bystander-kit/bystander/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layout, err := os.ReadFile(filepath.Join(root, "docs/development.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(layout), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p, "github.com/bystander-kit/bystander/")
		if !listed[rel] {
			t.Errorf("package %s is not in the layout (docs/development.md)", rel)
		}
	}
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

func TestDocsLinks(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join(root, "docs/*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s links to %s, which is not there", filepath.Base(page), target)
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// '-' and '_' dropped, spaces as '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var heading = regexp.MustCompile("(?m)^#{1,6} (.+)$")

// TestDocsAnchors: every link into a page's heading (page.md#anchor, or
// #anchor within the page) leads to a heading that is there.
func TestDocsAnchors(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join(root, "docs/*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	anchors := func(page string) map[string]bool {
		text, err := os.ReadFile(page)
		if err != nil {
			return nil
		}
		set := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(string(text), -1) {
			set[slug(m[1])] = true
		}
		return set
	}
	inPage := regexp.MustCompile(`\]\(([^)#\s]*)#([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inPage.FindAllStringSubmatch(string(text), -1) {
			target := page
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(page), m[1])
			}
			if !strings.HasSuffix(target, ".md") {
				continue
			}
			checked++
			if !anchors(target)[m[2]] {
				t.Errorf("%s links to %s#%s: no such heading there", filepath.Base(page), filepath.Base(target), m[2])
			}
		}
	}
	if checked < 5 {
		t.Errorf("%d links to headings checked: the links are not being found", checked)
	}
}
