package findings_test

import (
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
)

// The as-is tests of findings compute a sweep's figures and typed
// verdicts and assert the sentences prose makes of them beside them
// (findings.AsIsSaid): findings makes no words, prose's tests cannot make
// a synthetic sweep.
func init() {
	s := &findings.AsIsSaid
	s.Class, s.StalledLine, s.CPU, s.Ceiling = prose.AsIsClass, prose.AsIsStalledLine, prose.AsIsCPU, prose.AsIsCeiling
	s.Stalled, s.Unjudged = prose.AsIsStalled, prose.AsIsUnjudged
}
