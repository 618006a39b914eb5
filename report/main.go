// Command report turns a run directory (run.json and its results) into one
// self-contained HTML page of echarts charts with captions, the ceilings
// overlaid, to share after a talk or show offline on stage.
//
//	report --in results/20261130T083446Z --out results/20261130T083446Z/report.html
//
// echarts is inlined: fetched once with `npm pack echarts@5.6.0`, checked
// against its published integrity and cached outside the repository. When
// it cannot be had, the page loads it from a CDN and says so.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/compare"
	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/page"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/stage"
)

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	args, runA, runB, comparing, err := splitCompare(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "run directory (holding run.json)")
	out := fs.String("out", "", "HTML file to write (default: report.html in the run directory)")
	echarts := fs.String("echarts", "", "use this echarts.min.js (5.6.0, checked) instead of the cache")
	offline := fs.Bool("offline", false, "never fetch echarts; without a cached copy the page uses a CDN")
	fetchOnly := fs.Bool("fetch", false, "fetch and check echarts into the cache, then exit")
	all := fs.Bool("all", false, "with --compare: print every figure, not only the changes that matter")
	stageOut := fs.String("stage-page", "", "write the live page of run.sh --stage (echarts inlined as in the report) to this file, then exit")
	talk := fs.String("talk", "", "write the recorded talk of this run directory (its stage.ndjson) as one self-contained HTML file (--out, default talk.html in it): opened from disk, offline; refused without echarts inlined")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: report --in RUN_DIR [--out FILE]\n       report --talk RUN_DIR [--out FILE]\n       report --compare RUN_A RUN_B [--out FILE] [--all]\n\n"+
			"Writes one self-contained HTML report of a bystander run. With --compare, prints two runs side by side\n"+
			"as benchstat does (every figure of every measurement both made, the change, and its significance across\n"+
			"repetitions; the changes that matter first, the rest with --all) and, with --out, writes the comparison\n"+
			"as an HTML page with both runs on the same axes.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *fetchOnly {
		a := page.LoadAsset(*echarts, false, stderr)
		if !a.Inlined() {
			fmt.Fprintf(stderr, "report: %s\n", a.Why())
			return 1
		}
		p, _ := page.CachePath()
		fmt.Fprintf(stdout, "report: echarts %s verified (%d bytes; cache %s)\n", page.EchartsVersion, a.Size(), p)
		return 0
	}
	if *stageOut != "" {
		a := loadAsset(*echarts, *offline, stderr, "the stage page")
		b, err := page.Stage(a)
		if err == nil {
			err = os.WriteFile(*stageOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
		return 0
	}
	if *talk != "" {
		return talkExit(*talk, *out, *echarts, *offline, stdout, stderr)
	}
	if comparing {
		if *in != "" || fs.NArg() > 0 {
			fmt.Fprintln(stderr, "report: --compare RUN_A RUN_B takes no --in and nothing else; see --help")
			return 2
		}
		return compareExit(runA, runB, *out, *echarts, *offline, *all, stdout, stderr)
	}
	if *in == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "report: give the run directory with --in (and nothing else); see --help")
		return 2
	}
	if *out == "" {
		*out = filepath.Join(*in, "report.html")
	}
	f, err := findings.Read(*in)
	if err != nil {
		fmt.Fprintf(stderr, "report: %s is not a run directory: %v\n", *in, err)
		return 1
	}
	for _, u := range f.Unread {
		fmt.Fprintf(stderr, "report: %s\n", prose.Unread(u))
	}
	b, err := page.Report(f, loadAsset(*echarts, *offline, stderr, "the page"))
	return writeOut(*out, b, err, stdout, stderr)
}

// talkExit is --talk: the recording of dir (or the stage.ndjson given)
// as one page that plays it from itself. A talk file is opened where there
// may be no network, so without echarts inlined it is refused.
func talkExit(dir, out, echarts string, offline bool, stdout, stderr io.Writer) int {
	rec := dir
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		rec = filepath.Join(dir, "stage.ndjson")
	}
	if out == "" {
		out = filepath.Join(filepath.Dir(rec), "talk.html")
	}
	frames, err := stage.Recording(rec)
	if err != nil {
		fmt.Fprintf(stderr, "report: --talk %s: %v (give a run directory made with ./run.sh --stage, or its stage.ndjson)\n", dir, err)
		return 1
	}
	a := page.LoadAsset(echarts, offline, stderr)
	b, err := page.Talk(a, frames)
	if errors.Is(err, page.ErrTalkNeedsEcharts) {
		fmt.Fprintf(stderr, "report: --talk needs echarts inlined, never from a CDN (%s): run report --fetch where npm can reach its registry, or give --echarts FILE\n", a.Why())
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "report: --talk %s: %v\n", dir, err)
		return 1
	}
	return writeOut(out, b, nil, stdout, stderr)
}

// loadAsset is echarts for a page, and a line saying what it costs when it
// cannot be inlined.
func loadAsset(given string, offline bool, stderr io.Writer, what string) page.Asset {
	a := page.LoadAsset(given, offline, stderr)
	if !a.Inlined() {
		fmt.Fprintf(stderr, "report: echarts is not inlined (%s); %s loads it from %s and needs the network\n", a.Why(), what, page.EchartsCDN)
	}
	return a
}

// writeOut writes a page to out through a rename, so a reader never sees
// half a page.
func writeOut(out string, b []byte, err error, stdout, stderr io.Writer) int {
	if err == nil {
		err = files.WriteAtomic(out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: wrote %s (%d KB)\n", out, len(b)/1024)
	return 0
}

// compareExit is --compare: the table on stdout, the page with --out;
// runs that cannot be compared are refused with why (status 1).
func compareExit(runA, runB, out, echarts string, offline, all bool, stdout, stderr io.Writer) int {
	c, err := compare.Runs(runA, runB)
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	for _, side := range []struct {
		name string
		f    *findings.Findings
	}{{"A", c.A}, {"B", c.B}} {
		for _, u := range side.f.Unread {
			fmt.Fprintf(stderr, "report: %s: %s\n", side.name, prose.Unread(u))
		}
	}
	c.Write(stdout, all)
	if out == "" {
		return 0
	}
	b, err := page.Compare(c, loadAsset(echarts, offline, stderr, "the page"))
	return writeOut(out, b, err, stdout, stderr)
}

// splitCompare takes "--compare A B" out of args: flag parsing stops at
// the first non-flag, and the two runs come right after the flag.
func splitCompare(args []string) (rest []string, a, b string, ok bool, err error) {
	for i, arg := range args {
		if arg != "--compare" && arg != "-compare" {
			continue
		}
		if i+2 >= len(args) || strings.HasPrefix(args[i+1], "-") || strings.HasPrefix(args[i+2], "-") {
			return nil, "", "", false, fmt.Errorf("report: --compare takes two run directories: --compare RUN_A RUN_B")
		}
		rest = append(slices.Clone(args[:i]), args[i+3:]...)
		return rest, args[i+1], args[i+2], true, nil
	}
	return args, "", "", false, nil
}
