package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// outDir is the run directory. A run that fails before it measures
// anything (a refused --target, a stage whose address is taken) leaves
// nothing behind: the directory it made is removed, one given empty is
// emptied again.
type outDir struct {
	path       string
	made, kept bool
}

// newOutDir makes the run directory: --out as prepareOut says, or the
// default results/<UTC timestamp>, made new by this run alone (freshDir).
func newOutDir(o Options) (*outDir, error) {
	if o.OutFresh {
		path, err := freshDir(o.Out)
		return &outDir{path: path, made: err == nil}, err
	}
	_, statErr := os.Stat(o.Out)
	d := &outDir{path: o.Out, made: errors.Is(statErr, fs.ErrNotExist)}
	return d, prepareOut(o.Out, o.Overwrite)
}

// DefaultOut is the run directory when none is given: results/<UTC
// timestamp of now> beside the kit's bin directory (Options.OutFresh).
func DefaultOut(bin string, now time.Time) string {
	return filepath.Join(filepath.Dir(abs(bin)), "results", now.UTC().Format("20060102T150405Z"))
}

// freshDir makes base, or base-2, base-3 ... when taken, and returns the
// one it made: each made exclusively (mkdir fails on one that exists), so
// two runs started in the same second never share one.
func freshDir(base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("run.sh: %v", err)
	}
	for i := 1; i <= maxSameSecond; i++ {
		path := base
		if i > 1 {
			path += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(path, 0o755)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("run.sh: %v", err)
		}
	}
	return "", fmt.Errorf("run.sh: %s and %s-2 to -%d are all taken (%d runs in one second?): give --out", base, base, maxSameSecond, maxSameSecond)
}

// maxSameSecond is how many default run directories one second may have.
const maxSameSecond = 100

// keep: measuring has begun, and what it writes stays.
func (d *outDir) keep() { d.kept = true }

func (d *outDir) dropUnlessKept() {
	if d.kept {
		return
	}
	if d.made {
		os.RemoveAll(d.path)
		return
	}
	if es, err := os.ReadDir(d.path); err == nil {
		for _, e := range es {
			os.RemoveAll(filepath.Join(d.path, e.Name()))
		}
	}
}

// prepareOut makes dir the run directory: new, or empty, so no earlier
// run's files mix with this one's. With overwrite, a directory that holds
// an earlier run of the kit's (a run.json it wrote, of a schema it reads)
// and nothing else is cleared first; anything else is refused, and nothing
// is removed.
func prepareOut(dir string, overwrite bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("run.sh: --out %s: %v", dir, err)
	case len(entries) > 0 && !overwrite:
		return fmt.Errorf("run.sh: --out %s is not empty (%s): give a new or empty directory, or --overwrite to clear an earlier run there", dir, words.Plural(len(entries), "entry"))
	case len(entries) > 0:
		paths, err := earlierRun(dir)
		if err != nil {
			return fmt.Errorf("run.sh: --out %s: %v: not cleared; give a new or empty directory", dir, err)
		}
		for _, p := range paths { // deepest first: a phase's files before its directory
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				return fmt.Errorf("run.sh: --overwrite: %v", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run.sh: --out %s: %v", dir, err)
	}
	return nil
}

// earlierRun lists what dir holds, deepest first, when it is an earlier
// run of the kit's and nothing else: its run.json one the kit wrote (read
// strictly, of a schema it knows), every other entry a file the kit writes
// in a run (the results of the measurements run.json lists, with their
// ready files and live streams, in their phase's directory; the summary,
// findings, report, stage recording and checks). A symbolic link, a
// directory of the user's or a file the run does not list is refused:
// --overwrite must never remove what the kit did not write.
func earlierRun(dir string) ([]string, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, fmt.Errorf("it holds no run of the kit's (%v)", err)
	}
	top := map[string]bool{"run.json": true, "summary.txt": true, "findings.json": true, "report.html": true, "stage.ndjson": true, "stage.html": true, "talk.html": true}
	if run.Report != "" && !strings.ContainsAny(run.Report, `/\`) {
		top[run.Report] = true
	}
	ids := map[string]map[string]bool{} // phase -> the bases of its measurements' files
	for _, m := range run.Measurements {
		if ids[m.Phase] == nil {
			ids[m.Phase] = map[string]bool{}
		}
		ids[m.Phase][m.ID] = true
		if m.Server.External {
			top["check-"+m.Server.Name+".json"] = true
		}
		ids[m.Phase][m.ID+".r"+strconv.Itoa(m.Repeat)] = true
	}
	kitFile := func(phase, name string) bool {
		base, _, ok := strings.Cut(name, ".")
		if !ok {
			return false
		}
		// base.rN.kind.json for a run of repetitions
		if n, _, _ := strings.Cut(strings.TrimPrefix(name, base+"."), "."); len(n) > 1 && n[0] == 'r' && strings.Trim(n[1:], "0123456789") == "" {
			base += "." + n
		}
		return ids[phase][base]
	}
	var paths, strangers []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && top[name]:
			paths = append(paths, name)
		case e.IsDir() && ids[name] != nil:
			sub, err := os.ReadDir(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			for _, f := range sub {
				if f.Type().IsRegular() && kitFile(name, f.Name()) {
					paths = append(paths, filepath.Join(name, f.Name()))
				} else {
					strangers = append(strangers, filepath.Join(name, f.Name()))
				}
			}
			paths = append(paths, name)
		default:
			strangers = append(strangers, name)
		}
	}
	if len(strangers) > 0 {
		if len(strangers) > 3 {
			strangers = append(strangers[:3], fmt.Sprintf("and %d more", len(strangers)-3))
		}
		return nil, fmt.Errorf("it holds an earlier run and what the run did not write (%s)", strings.Join(strangers, ", "))
	}
	return paths, nil
}
