package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bystander-kit/bystander/internal/stage"
)

// runReplay plays a recorded stage (--stage --replay RUN_DIR) on the same
// page, at its real pace, without servers.
func runReplay(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	rec := filepath.Join(o.Replay, "stage.ndjson")
	if _, err := os.Stat(rec); err != nil {
		return refused(fmt.Errorf("run.sh: --replay %s: no stage recording there (%v): record one with ./run.sh --stage", o.Replay, err))
	}
	b, err := stagePage(stderr)
	if err != nil {
		return refused(err)
	}
	hub, err := stage.NewHub("", b)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := openStage(sctx, o, hub, stdout); err != nil {
		return refused(err)
	}
	waitForPage(ctx, o, hub, stdout)
	fmt.Fprintf(stdout, "stage: replaying %s at its real pace (P pauses)\n", rec)
	n, err := stage.Replay(ctx, rec, hub)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	fmt.Fprintf(stdout, "stage: replayed %d frames\n", n)
	if o.Auto {
		time.Sleep(2 * stage.Every)
		return nil
	}
	fmt.Fprintln(stdout, "stage: the page stays up until Ctrl-C (10 minutes at most)")
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Minute):
	}
	return nil
}
