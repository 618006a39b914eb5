package prose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestOutsideRow: a stall step's threads file is judged into the row's
// culprits and said in the stall table; one that is not the kit's is
// listed as not read, and its measurement left out whole.
func TestOutsideRow(t *testing.T) {
	dir, b := smallRunDir(t)
	run, err := results.DecodeRun(b)
	if err != nil {
		t.Fatal(err)
	}
	f := findings.Compute(dir, run)
	var row *findings.StallRow
	for i := range f.Stall {
		if f.Stall[i].Step.ID == "stall-a" {
			row = &f.Stall[i]
		}
	}
	if row == nil || len(row.Culprits) != 1 {
		t.Fatalf("stall-a: %+v", row)
	}
	if c := row.Culprits[0]; c.Thread != "loop-1" || c.State != "Thread.sleep" || c.Culprit().Short() != "app.Handler.read (Handler.java:12)" {
		t.Errorf("culprit %+v", c)
	}
	var tables strings.Builder
	WriteTables(&tables, f)
	if got := StallDetector(*row); got != "none; from outside: 1 thread held (below)" {
		t.Errorf("detector column %q", got)
	}
	if want := "k=1 s-loop: held in Thread.sleep at app.Handler.read (Handler.java:12): thread loop-1"; !strings.Contains(tables.String(), want) {
		t.Errorf("the stall table lacks %q:\n%s", want, tables.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "stall/threads.json"), []byte(`{"schema":"bystander.threads/v0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f = findings.Compute(dir, run)
	if len(f.Unread) != 1 || f.Unread[0].Field != "threads_file" {
		t.Errorf("unread %+v", f.Unread)
	}
}

// TestOutsideNotPossible: a target without pid= is told what one would
// add; one on another machine, that the kit cannot look.
func TestOutsideNotPossible(t *testing.T) {
	dir, b := smallRunDir(t)
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:8090", "s-loop: no pid= given: with one, the kit names the threads its blockers held"},
		{"http://10.1.2.3:8090", "s-loop: not on this machine: the kit cannot look at its threads"},
	} {
		run, err := results.DecodeRun(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range run.Measurements {
			m := &run.Measurements[i]
			m.Server.External, m.Server.URL, m.ThreadsFile = true, c.url, ""
		}
		var tables strings.Builder
		WriteTables(&tables, findings.Compute(dir, run))
		if !strings.Contains(tables.String(), c.want) {
			t.Errorf("%s: the stall table lacks %q:\n%s", c.url, c.want, tables.String())
		}
	}
}
