package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The echarts build the report inlines. The tarball's integrity is the one
// the npm registry publishes for echarts@5.6.0; the sha256 is of
// dist/echarts.min.js inside that verified tarball, so any copy of the file,
// cached or given, is checked against it before it is inlined.
const (
	echartsVersion   = "5.6.0"
	echartsIntegrity = "sha512-oTbVTsXfKuEhxftHqL5xprgLoc0k7uScAwtryCgWF6hPYFLRwOUHiFmHGCBKP5NPFNkDVopOieyUqYGH8Fa3kA=="
	echartsSHA256    = "bf4a223524e40b77c304bec67e1222cf551f14880cf42c69dc046558e11c07b1"
	echartsCDN       = "https://cdn.jsdelivr.net/npm/echarts@5.6.0/dist/echarts.min.js"
)

// asset is the echarts script for the page: inlined, or a CDN tag with the
// reason it could not be inlined.
type asset struct {
	js   []byte // nil: use the CDN
	note string // why not inlined, when js is nil
}

func cachePath() (string, error) {
	dir := os.Getenv("BYSTANDER_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir() // no HOME: a cache that lasts until reboot still saves the fetch
		}
		dir = filepath.Join(base, "bystander")
	}
	return filepath.Join(dir, "echarts-"+echartsVersion+".min.js"), nil
}

// checkJS verifies a copy of echarts.min.js and that it can be inlined.
func checkJS(b []byte) error {
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != echartsSHA256 {
		return fmt.Errorf("echarts.min.js has sha256 %s, want %s (echarts %s)", got, echartsSHA256, echartsVersion)
	}
	// go-echarts removes every "__f__" from its output, and "</script"
	// would end the inline tag.
	if bytes.Contains(b, []byte("__f__")) || bytes.Contains(bytes.ToLower(b), []byte("</script")) {
		return errors.New("echarts.min.js holds __f__ or </script and cannot be inlined")
	}
	return nil
}

// loadAsset finds echarts: the file given, else the cache, else (unless
// offline) npm pack into the cache. It never fails: without echarts the
// page uses the CDN and says so.
func loadAsset(given string, offline bool, log io.Writer) asset {
	if given != "" {
		b, err := os.ReadFile(given)
		if err == nil {
			err = checkJS(b)
		}
		if err != nil {
			return asset{note: fmt.Sprintf("--echarts %s: %v", given, err)}
		}
		return asset{js: b}
	}
	path, err := cachePath()
	if err != nil {
		return asset{note: fmt.Sprintf("no cache directory: %v", err)}
	}
	if b, err := os.ReadFile(path); err == nil {
		if err := checkJS(b); err == nil {
			return asset{js: b}
		}
		fmt.Fprintf(log, "report: the cached %s does not verify; fetching it again\n", path)
	}
	if offline {
		return asset{note: "echarts is not in the cache and --offline forbids fetching it"}
	}
	b, err := fetch(path, log)
	if err != nil {
		return asset{note: err.Error()}
	}
	return asset{js: b}
}

// fetch runs `npm pack echarts@VERSION`, checks the tarball against the
// published integrity, extracts dist/echarts.min.js, checks it and caches it.
func fetch(path string, log io.Writer) ([]byte, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, errors.New("npm is not installed, so echarts could not be fetched (apt-get install npm, or pass --echarts FILE)")
	}
	tmp, err := os.MkdirTemp("", "bystander-echarts")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "report: fetching echarts %s with npm pack (once; cached in %s)\n", echartsVersion, filepath.Dir(path))
	cmd := exec.Command(npm, "pack", "echarts@"+echartsVersion, "--silent")
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("npm pack echarts@%s failed: %v %s", echartsVersion, err, strings.TrimSpace(stderr.String()))
	}
	tgz, err := os.ReadFile(filepath.Join(tmp, "echarts-"+echartsVersion+".tgz"))
	if err != nil {
		return nil, fmt.Errorf("npm pack wrote no tarball: %w", err)
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != echartsIntegrity {
		return nil, fmt.Errorf("the echarts tarball's integrity %s is not the published %s", got, echartsIntegrity)
	}
	js, err := extract(tgz, "package/dist/echarts.min.js")
	if err != nil {
		return nil, err
	}
	if err := checkJS(js); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = os.WriteFile(path+".tmp", js, 0o644)
		_ = os.Rename(path+".tmp", path)
	}
	return js, nil
}

func extract(tgz []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("the echarts tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("%s not found in the echarts tarball: %v", name, err)
		}
		if h.Name == name {
			return io.ReadAll(io.LimitReader(tr, 16<<20))
		}
	}
}
