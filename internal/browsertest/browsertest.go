// Package browsertest opens pages in Debian's headless chromium for tests,
// with the network closed, and says what the page complained of.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's chromium. Outside CI a machine without it skips
// the browser test; in CI (CI set) .ci/run installs it and the test must run.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "chromium-headless-shell", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI: no chromium on PATH; .ci/run must install it (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); the browser test runs in CI")
	return ""
}

// Open starts headless chromium with the network closed and returns
// its context and what the page said: requests other than file: and data:
// URLs and loopback (the stage's own server), exceptions, console errors,
// log errors.
func Open(t *testing.T, chrome string, width, height int) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "127.0.0.1"), // the stage serves on loopback; nothing else is reached
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute) // the stage test gives a whole short talk
	t.Cleanup(cancel)

	problems := watch(t, ctx)
	// The page gets exactly width x height: a headless window's size
	// includes what the browser keeps for itself.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatal(err)
	}
	return ctx, problems
}

// Tab opens a second tab in the browser of ctx (an Open's), width x
// height, with what its page says: two windows of one browser, as a
// speaker's projector and speaker view are.
func Tab(t *testing.T, ctx context.Context, width, height int) (context.Context, func() []string) {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	problems := watch(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatal(err)
	}
	return tab, problems
}

// watch records what the page of ctx says that a test must not see.
func watch(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "http://127.0.0.1:") {
				problems = append(problems, "request for "+u)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("JS exception: %s %v", e.ExceptionDetails.Text, e.ExceptionDetails.Exception))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, fmt.Sprintf("console.%s: %v", e.Type, e.Args))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log error: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}
