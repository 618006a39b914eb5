package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/page"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
)

// stagePage is the stage's page, echarts inlined as in the report (fetched
// and cached once; without it the page loads echarts from a CDN, and says so).
func stagePage(stderr io.Writer) ([]byte, error) {
	a := page.LoadAsset("", false, stderr)
	if !a.Inlined() {
		fmt.Fprintf(stderr, "run.sh: --stage: echarts is not inlined (%s); the page loads it from %s and needs the network\n", a.Why(), page.EchartsCDN)
	}
	return page.Stage(a)
}

// openStage serves the page and says where.
func openStage(ctx context.Context, o Options, h *stage.Hub, stdout io.Writer) error {
	addr, err := stage.Serve(ctx, o.StageAddr, h)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("run.sh: the stage's address %s is taken (another stage still running?): give another with --stage-addr, or --stage-addr=127.0.0.1:0 to pick a free one", o.StageAddr)
	}
	if err != nil {
		return err
	}
	h.Allow(addr)
	url := "http://" + addr + "/"
	fmt.Fprintf(stdout, "stage: %s  (Space, Right or PageDown: next; Left or PageUp: back; 1-%d: a screen; B: blank; P: pause; R: repeat; T: theme)\n", url, screens)
	fmt.Fprintf(stdout, "stage: the speaker view: %spresenter (a second window; both follow the same keys)\n", url)
	if o.Open {
		openReport(stdout, url)
	}
	return nil
}

// waitForPage is --auto's start: it waits for a page (--auto-wait) and
// says so, and says when none came.
func waitForPage(ctx context.Context, o Options, hub *stage.Hub, stdout io.Writer) {
	if !o.Auto || o.AutoWait <= 0 {
		return
	}
	fmt.Fprintf(stdout, "stage: --auto starts once a page is open (waiting %s at most)\n", o.AutoWait)
	if hub.WaitPage(ctx, o.AutoWait) {
		select {
		case <-ctx.Done():
		case <-time.After(autoSettle):
		}
		return
	}
	if ctx.Err() == nil {
		fmt.Fprintf(stdout, "stage: no page opened within %s: starting without one (--auto-wait sets how long)\n", o.AutoWait)
	}
}

// runStage runs the measurements screen by screen, as the presenter (or
// --auto) asks, and returns what to do once the run is written up.
//
// started is called once the page is served, before the first
// measurement: a stage that cannot start leaves no run behind.
func (r *runner) runStage(ctx context.Context, stdout io.Writer, started func()) (func(), error) {
	b, err := stagePage(stdout)
	if err != nil {
		return nil, refused(err)
	}
	hub, err := stage.NewHub(filepath.Join(r.dir, "stage.ndjson"), b)
	if err != nil {
		return nil, refused(err)
	}
	ctl := stageKeys(hub)
	sctx, stop := context.WithCancel(context.Background()) // outlives ctx: the page says the run was interrupted
	if err := openStage(sctx, r.o, hub, stdout); err != nil {
		stop()
		return nil, refused(err)
	}
	started()
	hubDone := make(chan struct{})
	go func() { hub.Run(sctx); close(hubDone) }()
	hub.Add(stageHello(r.o, r.plan.Steps))
	waitForPage(ctx, r.o, hub, stdout)

	row := func(m results.Measurement) *stage.StepRow {
		r.mu.Lock()
		params, manifest := r.run.Params, r.run.Manifest
		r.mu.Unlock()
		return stepRow(r.dir, params, manifest, m)
	}
	// The steps the plan skips (a service measured as it is: the phases
	// that need the protocol) are no slide's: recorded as skipped, why.
	for i, m := range r.run.Measurements {
		if why := r.plan.Skips[m.ID]; why != "" {
			r.set(i, func(m *results.Measurement) { m.Status, m.Reason = "skipped", why })
		}
	}
	st := newStageSteps(r.o, r.dir, hub, ctl, r.plan.Steps, r.run.Measurements, row)
	r.observers = append(r.observers, st)
	r.measure(ctx, st)
	return func() {
		hub.Add(stage.Done{Report: r.run.Report, Dir: r.dir})
		if !r.o.Auto && ctx.Err() == nil {
			fmt.Fprintln(stdout, "stage: done; the page stays up until Ctrl-C (10 minutes at most)")
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Minute):
			}
		} else {
			time.Sleep(2 * stage.Every) // the page gets the last frame
		}
		stop()
		<-hubDone
		_ = hub.Close()
		writeTalk(r.dir, stdout)
	}, nil
}

// writeTalk writes the run's recorded talk as one file beside its
// recording (talk.html, what report --talk writes): the talk given from
// any laptop, offline. Without echarts inlined there is none, and why is
// said, in run.sh's words: a talk file never fetches a script.
func writeTalk(dir string, stdout io.Writer) {
	frames, err := stage.Recording(filepath.Join(dir, "stage.ndjson"))
	var b []byte
	if err == nil {
		a := page.LoadAsset("", false, io.Discard)
		b, err = page.Talk(a, frames)
		if errors.Is(err, page.ErrTalkNeedsEcharts) {
			fmt.Fprintf(stdout, "stage: no talk.html (the recorded talk as one file): echarts is not inlined (%s), and a talk file never loads it from a CDN; bin/report --fetch where npm can reach its registry, then bin/report --talk %s makes it\n", a.Why(), dir)
			return
		}
	}
	if err == nil {
		err = files.WriteAtomic(filepath.Join(dir, "talk.html"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stdout, "stage: no talk.html (the recorded talk as one file): %v; bin/report --talk %s makes it later\n", err, dir)
		return
	}
	fmt.Fprintf(stdout, "stage: %s written: the recorded talk as one file, opened from disk on any laptop, offline (docs/talk.md)\n", filepath.Join(dir, "talk.html"))
}
