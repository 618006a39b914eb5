package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// TestFileRoundTrip: what a watch found is written and read back the same;
// a file of another schema, with an unknown field, outside the run
// directory, or past the caps is refused or capped.
func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := culprit.Service{Source: culprit.SourceJFR, Role: "event-loop threads", Serving: 4, WindowNs: 3e9, ThresholdNs: 1e6,
		Holds: []culprit.Hold{{State: "in a socket read", Peer: "127.0.0.1:5432", Held: 4, Threads: []string{"a", "b", "c", "d"}, HeldNs: 11e9, Calls: 1800, LongestNs: 9e6,
			Frames: []culprit.Frame{{Function: "shop.LedgerClient.balance", File: "LedgerClient.java", Line: 35}}}}}
	if err := Write(dir, "netty.watch.json", "netty", s); err != nil {
		t.Fatal(err)
	}
	f, err := ReadIn(dir, "netty.watch.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.Server != "netty" || f.Service.Words() != s.Words() {
		t.Errorf("read back %q: %q, want %q", f.Server, f.Service.Words(), s.Words())
	}
	for name, body := range map[string]string{
		"schema":  `{"schema": "bystander.watch/v2", "server": "x", "service": {"source": "", "role": "", "window_ns": 0, "threshold_ns": 0}}`,
		"unknown": `{"schema": "bystander.watch/v1", "server": "x", "evil": 1, "service": {"source": "", "role": "", "window_ns": 0, "threshold_ns": 0}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadIn(dir, name); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	if _, err := ReadIn(dir, "../"+filepath.Base(dir)+"/netty.watch.json"); err == nil {
		t.Error("a path out of the run directory: read")
	}
	big := culprit.Service{Role: strings.Repeat("r", 4*culprit.MaxText)}
	for range culprit.MaxHolds + 2 {
		big.Holds = append(big.Holds, culprit.Hold{State: "x"})
	}
	b := `{"schema": "bystander.watch/v1", "server": "` + strings.Repeat("s", 4*culprit.MaxText) + `", "service": {"source": "", "role": "` + big.Role + `", "window_ns": 1, "threshold_ns": 1, "holds": [`
	for i := range culprit.MaxHolds + 2 {
		if i > 0 {
			b += ","
		}
		b += `{"state": "x", "held": 1, "held_ns": 1, "calls": 1, "longest_ns": 1}`
	}
	b += `]}}`
	if err := os.WriteFile(filepath.Join(dir, "big"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err = ReadIn(dir, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Server) != culprit.MaxText || len(f.Service.Role) != culprit.MaxText || len(f.Service.Holds) != culprit.MaxHolds {
		t.Errorf("not capped: server %d, role %d, holds %d", len(f.Server), len(f.Service.Role), len(f.Service.Holds))
	}
}
