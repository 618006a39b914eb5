// Package page builds the kit's self-contained HTML pages: the report of a
// run (Report), two runs side by side (Compare) and the live page of
// run.sh --stage (Stage). Each carries echarts inlined (LoadAsset: a
// bundle built from npm's tarballs, checked against their published
// integrity and a pinned digest, cached outside the repository), so a page
// opens with no network; without it, a page loads echarts from a CDN and
// says so. Everything on a page that comes from a run directory is escaped:
// a run may be a stranger's.
//
// One file a chart (chart_*.go); the pages' HTML and scripts are files of
// their own (*.html, *.js), embedded.
package page

import (
	"bytes"
	"io"

	"github.com/bystander-kit/bystander/internal/compare"
	"github.com/bystander-kit/bystander/internal/findings"
)

// EchartsVersion is the echarts the pages inline; EchartsCDN is where a
// page loads it from when it could not be inlined.
const (
	EchartsVersion = echartsVersion
	EchartsCDN     = echartsCDN
)

// LoadAsset finds echarts for a page: the file given (an echarts.min.js of
// EchartsVersion, checked), else the cache, else (unless offline) it is
// fetched, checked and cached; log gets a line while it fetches. A page
// made without it loads echarts from EchartsCDN (Asset.Inlined says).
func LoadAsset(given string, offline bool, log io.Writer) Asset {
	return loadAsset(given, offline, log)
}

// Inlined says whether the pages carry echarts; Why says why not.
func (a Asset) Inlined() bool { return a.js != nil }

// Why is why echarts is not inlined ("" when it is).
func (a Asset) Why() string { return a.note }

// Size is the inlined bundle's size in bytes (0: not inlined).
func (a Asset) Size() int { return len(a.js) }

// CachePath is where the checked bundle is cached.
func CachePath() (string, error) { return cachePath() }

// Report is the report page of a run's findings.
func Report(f *findings.Findings, a Asset) ([]byte, error) {
	return bytesOf(buildPage(f, a))
}

// Compare is the page of run A against run B.
func Compare(c *compare.Comparison, a Asset) ([]byte, error) {
	return bytesOf(comparePage(c, a))
}

// Stage is the live page of run.sh --stage, fed by the frames of its
// /events (internal/stage).
func Stage(a Asset) ([]byte, error) { return writeStagePage(a) }

// Talk is a recorded talk as one self-contained page: the stage page
// carrying the recording's frames (internal/stage.Recording), played from
// itself, opened from disk with no network. It refuses an Asset without
// echarts inlined (ErrTalkNeedsEcharts). Its errors name no program.
func Talk(a Asset, frames [][]byte) ([]byte, error) { return writeTalkPage(a, frames) }

func bytesOf(p page) ([]byte, error) {
	var buf bytes.Buffer
	if err := writePage(&buf, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
