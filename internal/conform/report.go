package conform

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// A check's report: the checks, their results, and the table and JSON
// they are written as.

// Schema names the JSON form of a Report.
const Schema = "bystander.check/v1"

// The results of one check.
const (
	Pass    = "PASS"
	Fail    = "FAIL"    // the server answers, but not as the protocol says
	Missing = "MISSING" // a header or endpoint the protocol names is absent
	Skip    = "SKIP"    // the check does not apply to this server (said why)
	// Busy: a timing check whose samples were neither what the protocol
	// asks nor what breaks it, every time: on a machine this busy the
	// check cannot tell. Not a failure; said with the figures.
	Busy = "BUSY"
)

// BusyText starts the reason of a check that could not be judged.
const BusyText = "machine too busy to judge"

// The checks, in the order they run.
const (
	CheckFast           = "fast"
	CheckSlow           = "slow-blocks"
	CheckBlockedNs      = "x-blocked-ns"
	CheckAsync          = "async"
	CheckOffload        = "offload"
	CheckKeepAlive      = "keep-alive"
	CheckErrors         = "errors"
	CheckLoops          = "x-loop"
	CheckSlowHoldsLoop  = "slow-holds-loop"
	CheckAsyncFreesLoop = "async-frees-loop"
	CheckContinuation   = "continuation-loop"
	CheckOffloadFrees   = "offload-frees-loop"
)

// Result is one check.
type Result struct {
	ID       string `json:"id"`
	What     string `json:"what"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Required bool   `json:"required"` // a FAIL or MISSING here fails the check as a whole
	// Needs are the run.sh phases that cannot run on the server unless
	// this check passes.
	Needs []string `json:"needs,omitempty"`
}

// Report is every check of one server.
type Report struct {
	Schema string   `json:"schema"`
	Target string   `json:"target"`
	Loops  int      `json:"loops"` // distinct X-Loop values seen; 0: no X-Loop
	Checks []Result `json:"checks"`
}

// OK says whether no required check failed or is missing: each passed,
// does not apply, or could not be judged on a machine too busy.
func (r *Report) OK() bool { return !r.Failed() }

// Failed says whether a required check failed or is missing.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Required && (c.Status == Fail || c.Status == Missing) {
			return true
		}
	}
	return false
}

// Unjudged says whether some check could not be judged (Busy).
func (r *Report) Unjudged() bool {
	for _, c := range r.Checks {
		if c.Status == Busy {
			return true
		}
	}
	return false
}

// NotPassed are the checks that neither passed nor were skipped, as
// "id STATUS: reason" lines, required or not.
func (r *Report) NotPassed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status != Pass && c.Status != Skip {
			line := fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Reason)
			if !c.Required && c.Status != Busy {
				line += " (optional)"
			}
			out = append(out, line)
		}
	}
	return out
}

// Get returns the check with id.
func (r *Report) Get(id string) Result {
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	return Result{ID: id, Status: Skip, Reason: "not run"}
}

// Blocking says why phase cannot run on the server, or "" when no check
// it needs failed or is missing (one too busy to judge does not block it).
func (r *Report) Blocking(phase string) string {
	var why []string
	for _, c := range r.Checks {
		if slices.Contains(c.Needs, phase) && (c.Status == Fail || c.Status == Missing) {
			why = append(why, fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Reason))
		}
	}
	return strings.Join(why, "; ")
}

// Write prints the report as a table.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "check of %s\n", r.Target)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tresult\twhy")
	for _, c := range r.Checks {
		st := c.Status
		if !c.Required && st != Pass && st != Skip {
			st += " (optional)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, st, c.Reason)
	}
	tw.Flush()
	switch {
	case r.Failed():
		fmt.Fprintln(w, "FAILED: the server does not speak the protocol (docs/protocol.md) where marked")
	case r.Unjudged():
		fmt.Fprintln(w, "no required check failed, but some could not be judged ("+BusyText+"): run the check again on a quieter machine")
	default:
		fmt.Fprintln(w, "every required check passed")
	}
}

// JSON is the report as written by --out.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}
