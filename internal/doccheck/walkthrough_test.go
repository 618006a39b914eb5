package doccheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkLimit bounds one walk-through: its builds and its --quick runs.
const walkLimit = 8 * time.Minute

// pageWalkthroughs are every walk-through the docs give, by page.
func pageWalkthroughs(t *testing.T) map[string][]Walkthrough {
	t.Helper()
	pages, _ := filepath.Glob(filepath.Join(root, "docs/*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	out := map[string][]Walkthrough{}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if w := Walkthroughs(string(b)); len(w) > 0 {
			out[filepath.Base(page)] = w
		}
	}
	return out
}

// copyRepo copies the repository's files (tracked, and new ones not
// ignored) into a fresh directory: the walk-throughs run from a
// repository's root as the docs say, and leave nothing in this one.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("not a git checkout (%v): CI runs from a clone, and the walk-throughs need its files", err)
		}
		t.Skipf("not a git checkout (%v): the walk-throughs need the repository's files", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// walk runs shell with bash from dir, stopping at the first command that
// fails; whatever it started in the background (its process group) is
// ended once it returns.
func walk(ctx context.Context, dir, shell string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, walkLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", shell)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The output goes to a file, not a pipe: the servers it started in the
	// background hold their copy of it open after bash is done.
	out, err := os.CreateTemp(dir, ".walkthrough-*.out")
	if err != nil {
		return "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	if cmd.Process != nil {
		endGroup(cmd.Process.Pid)
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("not done in %v: %w", walkLimit, err)
	}
	text, _ := os.ReadFile(out.Name())
	return string(text), err
}

// endGroup ends the process group pgid: TERM, then KILL what is left.
func endGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	for i := 0; i < 50; i++ {
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Every walk-through runs as written from a copy of the repository, after
// the README's first command built the kit (./run.sh builds bin/ before it
// reads its flags), each ./run.sh with --quick.
func TestWalkthroughs(t *testing.T) {
	all := pageWalkthroughs(t)
	n := 0
	for _, ws := range all {
		n += len(ws)
	}
	if n < 4 {
		t.Fatalf("the docs mark %d walk-throughs (<!-- walkthrough: NAME --> before a fenced block): want your-server.md's", n)
	}
	if testing.Short() {
		t.Skip("-short: the walk-throughs build and run the kit")
	}
	dir := copyRepo(t)
	if out, err := walk(context.Background(), dir, "./run.sh --help >/dev/null"); err != nil {
		t.Fatalf("./run.sh --help: %v\n%s", err, out)
	}
	for page, ws := range all {
		for _, w := range ws {
			t.Run(page+"/"+w.Name, func(t *testing.T) {
				start := time.Now()
				out, err := walk(context.Background(), dir, Quick(w.Shell))
				if err != nil {
					t.Errorf("%s line %d, walk-through %s: %v\n%s\n--- its output:\n%s", page, w.Line, w.Name, err, w.Shell, out)
				}
				t.Logf("%s: %v", w.Name, time.Since(start).Round(time.Second))
			})
		}
	}
}

// A walk-through whose command fails fails, and what it left running in
// the background is ended.
func TestDoctoredWalkthroughFails(t *testing.T) {
	ws := Walkthroughs("<!-- walkthrough: bad -->\n```\nsleep 300 &\necho $! > pid\nfalse\necho never\n```\n")
	if len(ws) != 1 {
		t.Fatalf("walk-throughs: %+v", ws)
	}
	dir := t.TempDir()
	out, err := walk(context.Background(), dir, ws[0].Shell)
	if err == nil || strings.Contains(out, "never") {
		t.Errorf("a failing command: err %v, output %q", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the background sleep (PID %d) was left running", pid)
	}
}

func TestQuick(t *testing.T) {
	for in, want := range map[string]string{
		"./run.sh --servers=loop\n":         "./run.sh --quick --servers=loop\n",
		"./run.sh --quick --servers=loop\n": "./run.sh --quick --servers=loop\n",
		"  ./run.sh   # the experiment\n":   "  ./run.sh --quick   # the experiment\n",
		"bin/prober --mode check\n":         "bin/prober --mode check\n",
		"echo ./run.sh is the experiment\n": "echo ./run.sh is the experiment\n",
	} {
		if got := Quick(in); got != want {
			t.Errorf("Quick(%q) = %q, want %q", in, got, want)
		}
	}
}
