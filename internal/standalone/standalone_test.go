package standalone

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const loopwatch = "github.com/bystander-kit/bystander/loopwatch"

// TestLoopwatchStandsAlone: a module outside this repository that requires
// only loopwatch, resolved through a module proxy (file://) built from
// this checkout, with the Go toolchain at hand and no workspace: its
// module graph is itself and loopwatch, nothing of the kit's and nothing
// else; loopwatch's go.mod requires nothing; and the stranger's code
// builds, with loopwatch (a program) and with loopwatchtest (a test).
func TestLoopwatchStandsAlone(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	const version = "v0.1.0"
	serve(t, proxy, loopwatch, version, filepath.Join(root, "loopwatch"))

	for _, c := range []struct {
		name, file, code, check string
	}{
		{"loopwatch", "main.go", `package main

import (
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

func main() {
	w := loopwatch.New(loopwatch.Options{Threshold: 5 * time.Millisecond})
	defer w.Stop()
	l := w.Loop("loop-0")
	l.Enter()
	l.Exit()
}
`, "build"},
		{"loopwatchtest", "handlers_test.go", `package handlers

import (
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch/loopwatchtest"
)

func TestHandlers(t *testing.T) {
	w := loopwatchtest.New(t, 5*time.Millisecond)
	l := w.Loop("loop-0")
	l.Enter()
	l.Exit()
}
`, "test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "go.mod"), "module example.com/stranger\n\ngo 1.21\n\nrequire "+loopwatch+" "+version+"\n")
			write(t, filepath.Join(dir, c.file), c.code)
			if c.check == "test" {
				write(t, filepath.Join(dir, "handlers.go"), "package handlers\n")
			}
			cache := t.TempDir()
			env := append(os.Environ(), "GOENV=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=file://"+filepath.ToSlash(proxy),
				"GOSUMDB=off", "GONOSUMDB=*", "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+cache, "GOPATH="+t.TempDir())
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("go", args...)
				cmd.Dir, cmd.Env = dir, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			if c.check == "build" {
				run("build", "./...")
			} else {
				run("test", "-count=1", "./...")
			}
			mods := strings.Fields(strings.ReplaceAll(run("list", "-m", "all"), "\n", " | "))
			if got, want := strings.Join(mods, " "), "example.com/stranger | "+loopwatch+" "+version+" |"; got != want {
				t.Errorf("go list -m all: %q, want the stranger's module and loopwatch alone", got)
			}
			var m struct{ GoMod string }
			if err := json.Unmarshal([]byte(run("list", "-m", "-json", loopwatch)), &m); err != nil {
				t.Fatal(err)
			}
			gomod, err := os.ReadFile(m.GoMod)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(gomod), "\n") {
				if f := strings.Fields(line); len(f) > 0 && (f[0] == "require" || f[0] == "replace" || f[0] == "toolchain") {
					t.Errorf("loopwatch's go.mod says %q: it must require nothing", line)
				}
			}
		})
	}
}

// serve puts module mod at version, from the directory dir, into the
// file:// module proxy at proxy: its list, info, go.mod and zip (every
// file under dir but those of a module of its own below it).
func serve(t *testing.T, proxy, mod, version, dir string) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	write(t, filepath.Join(at, "list"), version+"\n")
	write(t, filepath.Join(at, version+".info"), string(info))
	write(t, filepath.Join(at, version+".mod"), string(gomod))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != dir && err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		w, err := zw.Create(mod + "@" + version + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(at, version+".zip"), buf.String())
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
