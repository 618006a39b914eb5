package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bystander-kit/bystander/internal/pngtext"
	"github.com/bystander-kit/bystander/internal/results"
)

// A screenshot's provenance, in its tEXt chunks (internal/pngtext): git
// keeps no mtimes, so the picture says itself which run it shows and when
// it was made.
const (
	// ShotSource is the run directory the shot shows, relative to the
	// repository's root (docs/run, docs/talk-run).
	ShotSource = "bystander-source"
	// ShotRun is that run's identity as RunIdentity says it.
	ShotRun = "bystander-run"
	// ShotMade is when the shot was made, RFC 3339 in UTC.
	ShotMade = "bystander-made"
)

// RunIdentity is the run in dir as a screenshot names it, from its
// run.json: when it started and, if it says so, when it finished; and the
// time it finished (its start when run.json says no end).
func RunIdentity(dir string) (string, time.Time, error) {
	r, err := results.ReadRun(dir)
	if err != nil {
		return "", time.Time{}, err
	}
	m := r.Manifest
	if m.StartUnixNs <= 0 {
		return "", time.Time{}, fmt.Errorf("doccheck: %s/run.json says no start (start_unix_ns)", dir)
	}
	start := time.Unix(0, m.StartUnixNs).UTC()
	id := "started " + start.Format(time.RFC3339Nano)
	if m.EndUnixNs <= 0 {
		return id, start, nil
	}
	end := time.Unix(0, m.EndUnixNs).UTC()
	return id + ", finished " + end.Format(time.RFC3339Nano), end, nil
}

// Provenance is what a shot made at made from the run in root/source
// says of itself.
func Provenance(root, source string, made time.Time) ([]pngtext.Text, error) {
	id, _, err := RunIdentity(filepath.Join(root, source))
	if err != nil {
		return nil, err
	}
	return []pngtext.Text{
		{Key: ShotSource, Value: filepath.ToSlash(source)},
		{Key: ShotRun, Value: id},
		{Key: ShotMade, Value: made.UTC().Format(time.RFC3339)},
	}, nil
}

// CheckShot checks the screenshot at path against the run it names, in
// the repository at root: it says its source, run and making; the source
// is a run directory inside root; the run there is the one it claims; it
// was made once that run had finished.
func CheckShot(root, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	texts, err := pngtext.Read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	source, claimed, madeText := texts[ShotSource], texts[ShotRun], texts[ShotMade]
	if source == "" || claimed == "" || madeText == "" {
		return fmt.Errorf("%s: it does not say which run it shows (tEXt %s, %s, %s): make it with go run ./internal/cmd/screenshots", path, ShotSource, ShotRun, ShotMade)
	}
	if !filepath.IsLocal(filepath.FromSlash(source)) {
		return fmt.Errorf("%s: its source %q is not a directory inside the repository", path, source)
	}
	dir := filepath.Join(root, filepath.FromSlash(source))
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		return fmt.Errorf("%s: its source %s is no run (no run.json there): make it again from a committed run", path, source)
	}
	id, finished, err := RunIdentity(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if claimed != id {
		return fmt.Errorf("%s: it shows the run %s, but %s is the run %s: make it again (go run ./internal/cmd/screenshots)", path, claimed, source, id)
	}
	made, err := time.Parse(time.RFC3339, madeText)
	if err != nil || made.Location() != time.UTC {
		return fmt.Errorf("%s: made %q: want RFC 3339 in UTC", path, madeText)
	}
	if made.Before(finished.Truncate(time.Second)) {
		return fmt.Errorf("%s: made %s, before its run in %s finished (%s): make it again (go run ./internal/cmd/screenshots)", path, madeText, source, finished.Format(time.RFC3339Nano))
	}
	return nil
}
