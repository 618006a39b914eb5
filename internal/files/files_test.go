package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new\n" {
		t.Fatalf("%q %v", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left behind: %v", es)
	}
	// A directory that does not exist: an error, nothing written.
	if err := WriteAtomic(filepath.Join(dir, "no", "x"), nil, 0o644); err == nil {
		t.Error("wrote into a missing directory")
	}
}

// TestReadIn: a file a run directory names is read only when it is a
// regular file inside the directory, after cleaning and symlinks, and no
// larger than the cap; anything else is refused at once, with why.
func TestReadIn(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sweep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sweep", "a.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, 2048), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link-out")))
	must(os.Symlink("sweep/a.json", filepath.Join(dir, "link-in")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	if b, err := ReadIn(dir, "sweep/a.json", 1024); err != nil || string(b) != "{}" {
		t.Fatalf("%q %v", b, err)
	}
	if b, err := ReadIn(dir, "link-in", 1024); err != nil || string(b) != "{}" {
		t.Fatalf("a link inside the directory: %q %v", b, err)
	}
	for rel, why := range map[string]string{
		"../" + filepath.Base(outside) + "/secret": "outside",
		"sweep/../../x":                  "outside",
		filepath.Join(outside, "secret"): "absolute",
		"link-out":                       "outside",
		"zero":                           "outside",
		"fifo":                           "not a regular file",
		"sweep":                          "not a regular file",
		"big.json":                       "over",
		"missing.json":                   "no such file",
		"":                               "empty",
	} {
		start := time.Now()
		_, err := ReadIn(dir, rel, 1024)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error saying %q", rel, err, why)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%q took %s: a refusal must be at once", rel, time.Since(start))
		}
	}
}

// TestReadCapped: a larger file is read up to its cap, no further.
func TestReadCapped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadCapped(p, 100); err != nil || len(b) != 100 {
		t.Errorf("%d bytes, %v", len(b), err)
	}
	if _, err := ReadCapped(filepath.Join(t.TempDir(), "none"), 100); err == nil {
		t.Error("no error for a file that does not exist")
	}
}

// TestReadRegular: a file a user names is read through symlinks, wherever
// it is, when it is regular and no larger than the cap; a FIFO, a device
// or a directory is refused at once (never opened, so never waited on),
// and a larger file refused, not cut.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "a.txt"), []byte("GET /\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2048), 0o644))
	must(os.Symlink("a.txt", filepath.Join(dir, "link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	for _, name := range []string{"a.txt", "link"} {
		if b, err := ReadRegular(filepath.Join(dir, name), 1024); err != nil || string(b) != "GET /\n" {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for path, why := range map[string]string{
		filepath.Join(dir, "fifo"):    "not a regular file (a FIFO)",
		dir:                           "not a regular file (a directory)",
		"/dev/zero":                   "not a regular file (a device)",
		filepath.Join(dir, "big"):     "2048 bytes, over the 1024",
		filepath.Join(dir, "missing"): "no such file",
	} {
		start := time.Now()
		b, err := ReadRegular(path, 1024)
		if err == nil || !strings.Contains(err.Error(), why) || b != nil {
			t.Errorf("%s: %d bytes, %v; want an error saying %q", path, len(b), err, why)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%s took %s: a refusal must be at once", path, time.Since(start))
		}
	}
}

// TestCacheDir: BYSTANDER_CACHE, else the user's cache directory's
// bystander, else (no home) the temporary directory's.
func TestCacheDir(t *testing.T) {
	t.Setenv("BYSTANDER_CACHE", "/elsewhere")
	if d := CacheDir(); d != "/elsewhere" {
		t.Errorf("BYSTANDER_CACHE: %s", d)
	}
	t.Setenv("BYSTANDER_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d := CacheDir(); d != "/xdg/bystander" {
		t.Errorf("the user's cache directory: %s", d)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("TMPDIR", t.TempDir())
	own := filepath.Join(os.TempDir(), fmt.Sprintf("bystander-%d", os.Getuid()))
	if d := CacheDir(); d != own {
		t.Errorf("no home: %s, want %s", d, own)
	}
	if fi, err := os.Lstat(own); err != nil {
		t.Errorf("no home: the temporary cache %s was not made: %v", own, err)
	} else if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("no home: the temporary cache %s is not a directory of the user's alone: %v", own, fi.Mode())
	}
}

// TestCacheDirPlanted: with no home, the cache falls back to the shared
// temporary directory, where another user may have made the name first
// (the kit runs what it builds there): a directory open to others, a link
// or another user's directory is never the cache; a fresh one of the
// process's own is.
func TestCacheDirPlanted(t *testing.T) {
	t.Setenv("BYSTANDER_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"open to others", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link", func(t *testing.T, path string) {
			if err := os.Symlink(t.TempDir(), path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's", func(t *testing.T, path string) {
			if os.Getuid() != 0 && os.Getenv("CI") != "" {
				t.Fatal("making another user's directory needs root: CI runs as root")
			} else if os.Getuid() != 0 {
				t.Skip("making another user's directory needs root")
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			names := []string{"bystander", fmt.Sprintf("bystander-%d", os.Getuid())} // the name before, and now
			for _, name := range names {
				tc.plant(t, filepath.Join(tmp, name))
			}
			d := CacheDir()
			for _, name := range names {
				planted := filepath.Join(tmp, name)
				if d == planted || strings.HasPrefix(d, planted+string(filepath.Separator)) {
					t.Fatalf("the cache is the planted %s", d)
				}
			}
			fi, err := os.Lstat(d)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !strings.HasPrefix(d, tmp) {
				t.Errorf("the cache %s is not a fresh directory of the user's in the temporary directory: %v", d, err)
			}
		})
	}
}
