package page

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/evanw/esbuild/pkg/api"
)

// The echarts build the report inlines: echarts' own ES modules with only
// the charts and components the pages use, bundled by esbuild's Go API from
// three npm tarballs, each checked against the integrity the npm registry
// publishes for it. The bundle is deterministic for this esbuild version
// (go.mod) and these inputs; its sha256 is pinned, so any copy, cached or
// given, is checked before it is inlined.
const (
	echartsVersion = "5.6.0"
	bundleSHA256   = "14260b3dd59337d0198ee6d2ab50b61483d94a47ae6e85923a496501726d13a6"
	echartsCDN     = "https://cdn.jsdelivr.net/npm/echarts@5.6.0/dist/echarts.min.js"
)

// tarballs are echarts and its only dependencies, with their published
// integrity.
var tarballs = []struct{ name, version, integrity string }{
	{"echarts", echartsVersion, "sha512-oTbVTsXfKuEhxftHqL5xprgLoc0k7uScAwtryCgWF6hPYFLRwOUHiFmHGCBKP5NPFNkDVopOieyUqYGH8Fa3kA=="},
	{"zrender", "5.6.1", "sha512-OFXkDJKcrlx5su2XbzJvj/34Q3m6PvyCZkVPHGYpcCJ52ek4U/ymZyfuV1nKE23AyBJ51E/6Yr0mhZ7xGTO4ag=="},
	{"tslib", "2.3.0", "sha512-N82ooyxVNm6h1riLCoyS9e3fuJ3AMG2zIZs2Gd1ATcSFjSA23Q0fzjjZeh0jbJvWVDZ0cJT8yaNNaaXHzueNjg=="},
}

// bundleEntry is what the pages use of echarts, and nothing else.
//
//go:embed bundle_entry.js
var bundleEntry string

// asset is the echarts script for the page: inlined (packed: gzipped,
// base64, unpacked by the browser), or a CDN tag with the reason it could
// not be inlined.
type Asset struct {
	js   []byte // nil: use the CDN
	note string // why not inlined, when js is nil
}

// script is echarts for a page, the loader both pages call, and before
// them the unpacker (window.bystanderUnpack): window.bystanderEcharts()
// gives a Promise that resolves once echarts is there. Inlined, the
// bundle comes gzipped and base64 and the browser unpacks it with its own
// DecompressionStream; without it, a CDN tag.
func (a Asset) script() template.HTML {
	unpack := strings.TrimSuffix(unpackHTML, "\n") + "\n"
	if a.js == nil {
		return template.HTML(unpack + strings.ReplaceAll(strings.TrimSuffix(echartsCDNHTML, "\n"), "{{CDN}}", echartsCDN))
	}
	return template.HTML(unpack + strings.Replace(strings.TrimSuffix(echartsInlineHTML, "\n"), "{{B64}}", base64.StdEncoding.EncodeToString(a.packed()), 1))
}

// The loaders both pages call (window.bystanderEcharts), files of their
// own: inlined, and from the CDN; and the unpacker of what a page carries
// packed, which both pages hold before them.
var (
	//go:embed echarts_inline.html
	echartsInlineHTML string
	//go:embed echarts_cdn.html
	echartsCDNHTML string
	//go:embed unpack.html
	unpackHTML string
)

// packed is the bundle gzipped.
func (a Asset) packed() []byte { return pack(a.js) }

// pack gzips b, deterministically (no name, no time): what a page carries
// packed (echarts, the charts' scripts), window.bystanderUnpack unpacks
// (unpack.html).
func pack(b []byte) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

func cachePath() (string, error) {
	return filepath.Join(files.CacheDir(), "echarts-"+echartsVersion+"-bystander-"+bundleSHA256[:12]+".js"), nil
}

// checkJS verifies a copy of the bundle and that it can be inlined.
func checkJS(b []byte) error {
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != bundleSHA256 {
		return fmt.Errorf("the echarts bundle has sha256 %s, want %s (echarts %s trimmed to the report's charts)", got, bundleSHA256, echartsVersion)
	}
	// go-echarts removes every "__f__" from its output, and "</script"
	// would end the inline tag.
	if bytes.Contains(b, []byte("__f__")) || bytes.Contains(bytes.ToLower(b), []byte("</script")) {
		return errors.New("the echarts bundle holds __f__ or </script and cannot be inlined")
	}
	return nil
}

// loadAsset finds echarts: the file given, else the cache, else (unless
// offline) npm pack into the cache. It never fails: without echarts the
// page uses the CDN and says so.
func loadAsset(given string, offline bool, log io.Writer) Asset {
	if given != "" {
		b, err := os.ReadFile(given)
		if err == nil {
			err = checkJS(b)
		}
		if err != nil {
			return Asset{note: fmt.Sprintf("--echarts %s: %v", given, err)}
		}
		return Asset{js: b}
	}
	path, err := cachePath()
	if err != nil {
		return Asset{note: fmt.Sprintf("no cache directory: %v", err)}
	}
	if b, err := os.ReadFile(path); err == nil {
		if err := checkJS(b); err == nil {
			return Asset{js: b}
		}
		fmt.Fprintf(log, "report: the cached %s does not verify; fetching it again\n", path)
	}
	if offline {
		return Asset{note: "echarts is not in the cache and --offline forbids fetching it"}
	}
	b, err := fetch(path, log)
	if err != nil {
		return Asset{note: err.Error()}
	}
	return Asset{js: b}
}

// fetch runs `npm pack` for echarts and its two dependencies, checks each
// tarball against its published integrity, lays them out as node_modules,
// bundles what the pages use with esbuild, checks the bundle and caches it.
// npmLimit bounds each npm pack (a registry that does not answer).
const npmLimit = 2 * time.Minute

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
	fmt.Fprintf(log, "report: fetching echarts %s with npm pack and bundling what the report uses (once; cached in %s)\n", echartsVersion, filepath.Dir(path))
	for _, tb := range tarballs {
		spec := tb.name + "@" + tb.version
		ctx, cancel := context.WithTimeout(context.Background(), npmLimit)
		cmd := exec.CommandContext(ctx, npm, "pack", spec, "--silent")
		cmd.WaitDelay = time.Second // once npm ended, whatever of its holds its output
		cmd.Dir = tmp
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("npm pack %s failed (%s at most): %v %s", spec, npmLimit, err, strings.TrimSpace(stderr.String()))
		}
		tgz, err := os.ReadFile(filepath.Join(tmp, tb.name+"-"+tb.version+".tgz"))
		if err != nil {
			return nil, fmt.Errorf("npm pack %s wrote no tarball: %w", spec, err)
		}
		sum := sha512.Sum512(tgz)
		if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != tb.integrity {
			return nil, fmt.Errorf("the %s tarball's integrity %s is not the published %s", spec, got, tb.integrity)
		}
		if err := unpack(tgz, filepath.Join(tmp, "node_modules", tb.name)); err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
	}
	js, err := bundle(tmp)
	if err != nil {
		return nil, err
	}
	if err := checkJS(js); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = files.WriteAtomic(path, js, 0o644) // a cache: the next run fetches again without it
	}
	return js, nil
}

// bundle builds bundleEntry against dir/node_modules.
func bundle(dir string) ([]byte, error) {
	r := api.Build(api.BuildOptions{
		Stdin:             &api.StdinOptions{Contents: bundleEntry, ResolveDir: dir, Loader: api.LoaderJS},
		Bundle:            true,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		Format:            api.FormatIIFE,
		Target:            api.ES2017,
		LegalComments:     api.LegalCommentsNone,
	})
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("esbuild: %s", r.Errors[0].Text)
	}
	if len(r.OutputFiles) != 1 {
		return nil, fmt.Errorf("esbuild wrote %d files, want 1", len(r.OutputFiles))
	}
	return r.OutputFiles[0].Contents, nil
}

// unpack extracts an npm tarball (its files under package/) into dir.
func unpack(tgz []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || h.Typeflag != tar.TypeReg || !filepath.IsLocal(rel) {
			continue // only regular files, and none outside dir
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(tr, 16<<20))
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
}
