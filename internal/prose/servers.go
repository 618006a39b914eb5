package prose

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a server as the run measured it: its workers and its
// ceiling, said from findings' ServerSummary.

// ServerWorkers is "4 loops", "200 slots", "1 loop", or "workers unknown".
func ServerWorkers(s findings.ServerSummary) string {
	switch {
	case s.Kind == "goroutine" && s.DBConns > 0:
		return fmt.Sprintf("a goroutine per connection or request, %d database connections", s.DBConns)
	case s.Kind == "goroutine":
		return "a goroutine per connection or request"
	case s.DBConns > 0 && s.Kind == "loop":
		return fmt.Sprintf("%d event loops, %d database connections", s.Workers, s.DBConns)
	case s.DBConns > 0:
		return fmt.Sprintf("%d slots, %d database connections", s.Workers, s.DBConns)
	case s.Workers == 0:
		return "workers unknown"
	case s.Kind == "loop" && s.Workers == 1:
		return "1 event loop"
	case s.Kind == "loop":
		return fmt.Sprintf("%d event loops", s.Workers)
	}
	return fmt.Sprintf("%d slots", s.Workers)
}

// Workers says n workers of a kind: "4 loops", "1 slot", "200 offload
// workers", "10 database connections", "64 callers".
func Workers(n int, k findings.WorkerKind) string {
	noun := map[findings.WorkerKind]string{findings.WorkerSlots: "slot", findings.WorkerLoops: "loop", findings.WorkerOffload: "offload worker",
		findings.WorkerDBConns: "database connection", findings.WorkerCallers: "caller"}[k]
	return words.Plural(n, noun)
}

// CeilingNoun is the workers of a server's ceiling in words: "4 loops",
// "200 slots", "200 offload workers", "10 database connections".
func CeilingNoun(s findings.ServerSummary) string {
	return Workers(s.SweepWorkers, s.WorkerKind())
}

// PresetWorkers is a calculator preset's workers in words: "4 loops", or,
// for a server measured as it is, "4 workers it behaves as".
func PresetWorkers(p findings.Preset) string {
	if p.AsIs {
		return words.Plural(p.Workers, "worker") + " it behaves as"
	}
	return Workers(p.Workers, p.Binds)
}

// ServerNoCeiling says why a server has no ceiling drawn ("" when it has one).
func ServerNoCeiling(s findings.ServerSummary) string {
	switch {
	case s.NominalCeiling > 0:
		return ""
	case s.Kind == "goroutine":
		return "no pool declared (a goroutine per connection or request), so no workers ceiling: what it does with a blocking call is measured (its classification)"
	}
	return "workers not known (give loops= or workers= with --target), so no ceiling is drawn for it"
}

// ServerCeiling is the nominal ceiling in words, "4 loops / 5ms = 800 req/s",
// or "" when the workers are not known.
func ServerCeiling(s findings.ServerSummary) string {
	if s.NominalCeiling == 0 {
		return ""
	}
	return fmt.Sprintf("%s / %s = %s", CeilingNoun(s), s.Block, words.PerS(s.NominalCeiling))
}

// StepCeiling is a step's ceiling in words, as the pages label it:
// "4 loops / 5ms = 800 req/s", or "" when its workers are not known.
func StepCeiling(s results.Step, offloadWorkers int) string {
	w, c := findings.StepCeiling(s, offloadWorkers)
	return ServerCeiling(findings.ServerSummary{Kind: s.Server.Kind, Workers: s.Server.Workers, SweepWorkers: w, DBConns: s.Server.DBConns, DBBound: findings.DBBinds(s, offloadWorkers),
		Block: s.Block.D(), NominalCeiling: c})
}
