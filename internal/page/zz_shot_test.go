package page

import (
	"os"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/chromedp/chromedp"
)

func TestZZShot(t *testing.T) {
	src := os.Getenv("SHOT_REPORT")
	if src == "" {
		t.Skip()
	}
	chrome := browsertest.Chromium(t)
	for _, size := range [][2]int{{1300, 1000}, {1600, 900}} {
		ctx, _ := browsertest.Open(t, chrome, size[0], size[1])
		if err := chromedp.Do(ctx, chromedp.Navigate("file://"+src), chromedp.WaitReady("#cost")); err != nil {
			t.Fatal(err)
		}
		chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond)))
		for _, id := range []string{"calc", "cliff", "cost", "throughput", "headline"} {
			browsertest.Shot(t, ctx, "/tmp/shots", "#"+id, id+"-"+string(rune('0'+size[0]/100%10)))
		}
	}
}
