// Command screenshots makes the pictures under docs/screenshots again, as
// a reader of the README sees them, from the committed runs the docs
// quote: the report of docs/run (./run.sh --servers=loop,pool,netty,tomcat)
// on a page 1300 px wide, its top, who stalls and the bad afternoon (the
// page made again from the run, as report does now); and each screen of
// the stage, replayed from docs/talk-run's recording (./run.sh --stage
// --auto) and walked with a clicker's keys, on 1600x900 and 1280x720
// projector pages, light and dark, with the cover the room sees before the
// first key, and the speaker view. Each PNG says in its tEXt chunks which
// run it shows and when it was made (internal/doccheck checks them). It
// needs Debian's chromium and the report's echarts (fetched and checked
// once, as the report does).
//
//	go run ./internal/cmd/screenshots [--out docs/screenshots]
//
// Run it from the repository's root.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/doccheck"
	"github.com/bystander-kit/bystander/internal/pngtext"
	"github.com/bystander-kit/bystander/internal/stage"
)

const (
	reportRun = "docs/run"      // the default run with Netty and Tomcat: the report's shots
	talkRun   = "docs/talk-run" // a stage run with --auto: the stage's shots
)

// recording is talkRun's recording of what the room saw.
var recording = filepath.Join(talkRun, "stage.ndjson")

func main() {
	out := flag.String("out", "docs/screenshots", "directory to write the PNGs to")
	timeout := flag.Duration("timeout", 3*time.Minute, "give up after this long")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./internal/cmd/screenshots [--out DIR]\n\n"+
			"Makes the README's screenshots again: the report of %s at 1300 px,\n"+
			"each stage screen of %s at 1600x900 and 1280x720, light and dark, and the speaker view.\n\nFlags:\n", reportRun, recording)
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *out); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository's root (where go.mod is)")
	}
	chrome := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		return errors.New("no chromium on PATH: sudo apt-get install chromium")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bystander-screenshots")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	report := filepath.Join(tmp, "report")
	for _, args := range [][]string{
		{"go", "build", "-o", report, "./report"},
		{report, "--fetch"},
		{report, "--in", reportRun, "--out", filepath.Join(tmp, "report.html")},
		{report, "--stage-page", filepath.Join(tmp, "stage.html")},
	} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.WaitDelay = time.Second // once it ended, whatever holds its output
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", filepath.Base(args[0]), err, b)
		}
	}
	page, err := os.ReadFile(filepath.Join(tmp, "stage.html"))
	if err != nil {
		return err
	}

	// The report, 1300 px wide: its top (the headline card and the first
	// chart), and who stalls.
	bctx, done := browser(ctx, chrome, 1300, 1500)
	defer done()
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+filepath.Join(tmp, "report.html"))); err != nil {
		return err
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		return fmt.Errorf("the report's charts were not drawn: %w", err)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	if err := save(out, "report-1300.png", reportRun, shot); err != nil {
		return err
	}
	// The stall heatmap from its heading down: 3k of 12 stall with k loops blocked.
	if err := fromHeading(bctx, "h_stall_loop_gnet", out, "report-1300-stall.png"); err != nil {
		return err
	}
	// The bad afternoon, from its heading down: the call slows tenfold, and
	// each server falls with the ceiling that binds it.
	if err := fromHeading(bctx, "h_slip", out, "report-1300-slip.png"); err != nil {
		return err
	}

	// The stage: each screen as it ended, light and dark, and the speaker
	// view beside it.
	if err := stageShots(ctx, chrome, page, out); err != nil {
		return fmt.Errorf("the stage: %w", err)
	}
	return nil
}

// fromHeading takes the report's page from the heading id down, as name.
func fromHeading(bctx context.Context, id, out, name string) error {
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.getElementById('`+id+`').scrollIntoView({block: 'start'}), true)`)); err != nil {
		return err
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return save(out, name, reportRun, shot)
}

// The projectors the stage is shot on: the README's (its names carry no
// size) and a small one.
var projectors = []struct {
	w, h   int
	suffix string
}{{1600, 900, ""}, {1280, 720, "-1280x720"}}

// stageShots serves the whole recording and walks it with the keys a
// clicker sends (Home, then PageDown), as a speaker rehearsing would: each
// screen as it ended, light and dark (screen 4 on its first slide, one loop
// blocked: 3 of 12; screen 6 on the loops'), at each projector size; the
// cover the room sees before the first key (the recording up to its first
// slide); then the speaker view.
func stageShots(ctx context.Context, chrome string, page []byte, out string) error {
	addr, frames, err := serveRecording(ctx, page, recording)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bystander-cover")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	coverRec, err := coverRecording(recording, dir)
	if err != nil {
		return err
	}
	coverAddr, coverFrames, err := serveRecording(ctx, page, coverRec)
	if err != nil {
		return err
	}
	for _, p := range projectors {
		bctx, done := browser(ctx, chrome, p.w, p.h)
		err := projectorShots(bctx, out, p.suffix, coverAddr, coverFrames, addr, frames)
		done()
		if err != nil {
			return err
		}
	}
	// The speaker view on the first slide of screen 4, 1600x900.
	bctx, done := browser(ctx, chrome, 1600, 900)
	defer done()
	if err := openStage(bctx, "http://"+addr+"/presenter", frames); err != nil {
		return err
	}
	if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.Home), chromedp.KeyEvent(kb.PageDown), chromedp.KeyEvent(kb.PageDown), chromedp.KeyEvent(kb.PageDown)); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	return shoot(bctx, out, "stage-presenter.png")
}

// serveRecording serves the stage's page with the recording rec replayed
// into it at once: its address and how many frames it holds.
func serveRecording(ctx context.Context, page []byte, rec string) (string, int, error) {
	hub, err := stage.NewHub("", page)
	if err != nil {
		return "", 0, err
	}
	frames, err := stage.ReplayWith(ctx, rec, hub, stage.ReplayOptions{Instant: true})
	if err != nil {
		return "", 0, err
	}
	addr, err := stage.Serve(ctx, "127.0.0.1:0", hub)
	if err != nil {
		return "", 0, err
	}
	hub.Allow(addr)
	return addr, frames, nil
}

// coverRecording writes, in dir, a recording of rec's hello alone: what a
// stage shows before its first key.
func coverRecording(rec, dir string) (string, error) {
	all, err := stage.Recording(rec)
	if err != nil {
		return "", err
	}
	var first stage.Frame
	if err := json.Unmarshal(all[0], &first); err != nil {
		return "", err
	}
	hello := first
	hello.Events = nil
	for _, ev := range first.Events {
		if bytes.Contains(ev, []byte(`"k":"hello"`)) {
			hello.Events = append(hello.Events, ev)
		}
	}
	line, err := json.Marshal(hello)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "stage.ndjson")
	return path, os.WriteFile(path, append([]byte(`{"schema":"`+stage.Schema+`"}`+"\n"), append(line, '\n')...), 0o644)
}

// openStage opens url and waits until the page has its frames.
func openStage(bctx context.Context, url string, frames int) error {
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		return err
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames >= %d", frames), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		return fmt.Errorf("%s: the frames did not arrive: %w", url, err)
	}
	time.Sleep(300 * time.Millisecond) // a frame of the browser's
	return nil
}

// projectorShots takes one projector size's shots: the cover and every
// screen, dark and light.
func projectorShots(bctx context.Context, out, suffix, coverAddr string, coverFrames int, addr string, frames int) error {
	for _, theme := range []string{"dark", "light"} {
		q := ""
		if theme == "dark" {
			q = "?theme=dark"
		}
		if err := openStage(bctx, "http://"+coverAddr+"/"+q, coverFrames); err != nil {
			return err
		}
		if err := shoot(bctx, out, fmt.Sprintf("stage-cover-%s%s.png", theme, suffix)); err != nil {
			return err
		}
	}
	if err := openStage(bctx, "http://"+addr+"/", frames); err != nil {
		return err
	}
	for _, theme := range []string{"dark", "light"} {
		// T switches the theme; Home goes to the first slide.
		if err := chromedp.Do(bctx, chromedp.KeyEvent("t"), chromedp.KeyEvent(kb.Home)); err != nil {
			return err
		}
		if err := slideShots(bctx, out, theme+suffix); err != nil {
			return err
		}
	}
	return nil
}

// slideShots walks the slides with PageDown, one shot per screen (its
// first slide), named stage-N-TAG.png.
func slideShots(bctx context.Context, out, tag string) error {
	taken := map[int]bool{}
	for range 30 {
		time.Sleep(300 * time.Millisecond) // a frame of the browser's
		type view struct{ View, Screen int }
		v, err := chromedp.Run(bctx, chromedp.Evaluate[view](`({View: window.stageView.view, Screen: window.stageView.screen})`))
		if err != nil {
			return err
		}
		if !taken[v.Screen] {
			taken[v.Screen] = true
			if err := shoot(bctx, out, fmt.Sprintf("stage-%d-%s.png", v.Screen, tag)); err != nil {
				return err
			}
		}
		if v.View < 0 {
			return nil
		}
		if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.PageDown)); err != nil {
			return err
		}
	}
	return nil
}

// shoot saves what the stage's browser of bctx shows as name.
func shoot(bctx context.Context, out, name string) error {
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return save(out, name, talkRun, shot)
}

// paletted is img in its 256 most frequent colours, each other pixel in
// the nearest of them: the pages' flat colours are kept exactly, the
// anti-aliased edges of text come near, and the file is a third the size.
func paletted(img image.Image) image.Image {
	count := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(count))
	for c := range count {
		colors = append(colors, c)
	}
	sort.Slice(colors, func(i, j int) bool {
		if count[colors[i]] != count[colors[j]] {
			return count[colors[i]] > count[colors[j]]
		}
		a, c := colors[i], colors[j]
		return uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A) < uint32(c.R)<<24|uint32(c.G)<<16|uint32(c.B)<<8|uint32(c.A)
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	return out
}

func browser(ctx context.Context, chrome string, w, h int) (context.Context, func()) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(w, h),
	)
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	// The page gets exactly w x h: a headless window's size includes what
	// the browser keeps for itself.
	_ = chromedp.Do(bctx, chromedp.EmulateViewport(int64(w), int64(h)))
	return bctx, func() { cancelB(); cancelA() }
}

// save writes a screenshot of the run in source again with the best
// compression, so the pictures the repository keeps stay small, and with
// its provenance: which run it shows, and when it was made.
func save(dir, name, source string, shot []byte) error {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, paletted(img)); err != nil {
		return err
	}
	texts, err := doccheck.Provenance(".", source, time.Now())
	if err != nil {
		return err
	}
	b, err := pngtext.Set(buf.Bytes(), texts...)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s (%d KB, %s)\n", p, len(b)/1024, source)
	return nil
}
