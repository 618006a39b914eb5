package doccheck

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/pngtext"
)

// kitRoot is the repository's root, from this package's directory.
const kitRoot = "../.."

// TestScreenshots: every picture under docs/screenshots says which
// committed run it shows, that run is there and is still the one it
// claims, and the picture was made after that run finished.
func TestScreenshots(t *testing.T) {
	shots, err := filepath.Glob(filepath.Join(kitRoot, "docs", "screenshots", "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shots) == 0 {
		t.Fatal("no docs/screenshots/*.png")
	}
	sources := map[string]int{}
	for _, p := range shots {
		if err := CheckShot(kitRoot, p); err != nil {
			t.Error(err)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pngtext.Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sources[texts[ShotSource]]++
		// The report's from the default run, the stage's from the talk.
		want := "docs/run"
		if strings.HasPrefix(filepath.Base(p), "stage-") {
			want = "docs/talk-run"
		}
		if texts[ShotSource] != want {
			t.Errorf("%s shows %s, want %s", p, texts[ShotSource], want)
		}
	}
	t.Logf("%d screenshots: %v", len(shots), sources)
}

// TestScreenshotsDoctored: a copy of a real screenshot rewritten, each
// way a picture goes stale or lies, fails the check with the reason; the
// copy as it is passes.
func TestScreenshotsDoctored(t *testing.T) {
	real := filepath.Join(kitRoot, "docs", "screenshots", "report-1300.png")
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	_, finished, err := RunIdentity(filepath.Join(kitRoot, "docs", "run"))
	if err != nil {
		t.Fatal(err)
	}
	talkID, _, err := RunIdentity(filepath.Join(kitRoot, "docs", "talk-run"))
	if err != nil {
		t.Fatal(err)
	}
	// Without any text: the picture decoded and written again.
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var bare bytes.Buffer
	if err := png.Encode(&bare, img); err != nil {
		t.Fatal(err)
	}
	set := func(texts ...pngtext.Text) []byte {
		t.Helper()
		out, err := pngtext.Set(b, texts...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		png  []byte
		why  string // "" passes
	}{
		{"as made", b, ""},
		{"no texts", bare.Bytes(), "does not say which run it shows"},
		{"made before its run finished", set(pngtext.Text{Key: ShotMade, Value: finished.Add(-time.Hour).Format(time.RFC3339)}), "before its run in docs/run finished"},
		{"another run's identity", set(pngtext.Text{Key: ShotRun, Value: talkID}), "but docs/run is the run started"},
		{"a source that is not there", set(pngtext.Text{Key: ShotSource, Value: "docs/no-run"}), "is no run"},
		{"a source outside the repository", set(pngtext.Text{Key: ShotSource, Value: "../run"}), "not a directory inside the repository"},
		{"made in local time", set(pngtext.Text{Key: ShotMade, Value: "2026-12-03T23:00:00+02:00"}), "want RFC 3339 in UTC"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".png")
		if err := os.WriteFile(p, tc.png, 0o644); err != nil {
			t.Fatal(err)
		}
		err := CheckShot(kitRoot, p)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.why)
		case err != nil:
			t.Logf("%s: %v", tc.name, err)
		}
	}
}
