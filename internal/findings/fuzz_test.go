package findings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bystander-kit/bystander/internal/results"
)

// FuzzResult: a result file is decoded strictly or refused; one that
// decodes is written and read back.
func FuzzResult(f *testing.F) {
	dir := "testdata/quick-run" // a run of every phase: one result of each kind
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := results.Decode(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := results.Decode(again); err != nil {
			t.Fatalf("a result that decoded does not read back once written: %v", err)
		}
	})
}
