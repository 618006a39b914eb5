package prose

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
)

var update = flag.Bool("update", false, "rewrite the goldens (tables.golden, findings.golden.json) of the test runs")

// goldenRuns are real runs of the kit: a default run (v3), one with other
// values of every parameter (v3), the Node.js example alone (v4), an
// /offload sweep (v4), a --quick run of every phase (v6, with the
// servers' own waits and /proc's raw figures), and a --quick run of every
// Go server the kit starts (the three loop engines, the pool, net/http,
// fasthttp, netpoll; sweep, stall and cliff), and the slip phase of a
// default run (v10: the call slows from 5 ms to 50 ms halfway); and two
// services measured as they are (v11, --load and --bystander, --quick):
// the Netty shop of examples/services (4 loops, its balance route asks a
// ledger over a blocking socket from the loop, 5 ms) at 1, 4 and 16
// callers, and its Node.js sign-in hashing with pbkdf2Sync at 1 and 4; and
// the Netty shop and the same shop on Tomcat measured as they are with
// pid=, each watched at its top step through Flight Recorder (v12, --quick,
// 1, 4 and 16 callers, beside other helpers' load: 53-69% of the machine).
var goldenRuns = []string{"run", "custom-run", "node-run", "offload-run", "quick-run", "engines-run", "slip-run", "asis-netty-run", "asis-node-run", "asis-watch-run"}

// TestGoldens: the tables and the JSON face of each test run are what was
// reviewed; go test ./internal/prose -run TestGoldens -update rewrites
// them after a reviewed change.
func TestGoldens(t *testing.T) {
	for _, name := range goldenRuns {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "findings", "testdata", name)
			f, err := findings.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var tables bytes.Buffer
			WriteTables(&tables, f)
			for file, got := range map[string][]byte{"tables.golden": tables.Bytes(), "findings.golden.json": FaceJSON(f)} {
				path := filepath.Join("testdata", name, file) // the run is findings', its goldens are the words'
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test ./internal/prose -run TestGoldens -update writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from what was reviewed; if the change is intended, rerun with -update and review the diff:\n%s", path, firstDiff(string(want), string(got)))
				}
			}
		})
	}
}

// firstDiff shows the first line that differs.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}
