package prose

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestAsIsSaysNothingLost: answers other than 2xx or 3xx and connections
// the service closed are said beside the as-is table's figures, the step
// kept (findings' TestAsIsNothingLost computes them).
func TestAsIsSaysNothingLost(t *testing.T) {
	step := func(conc int) findings.AsIsStep {
		g := &findings.Group{Step: results.Step{ID: "asis", Conc: conc}, Load: []*results.Result{{}}}
		return findings.AsIsStep{LoadRow: findings.LoadRow{Group: g, Throughput: findings.Figure{752}}}
	}
	one, four := step(1), step(4)
	one.Dials = findings.Figure{1}
	four.Errors = []results.ErrorCount{{Kind: "bad_status", Count: 310}}
	four.Dials, four.PerClose = findings.Figure{3700}, findings.Figure{1.1}
	f := &findings.Findings{Run: &results.Run{}, AsIs: []findings.AsIs{{Server: "shop", Steps: []findings.AsIsStep{one, four}}}}
	var b strings.Builder
	writeAsIs(&b, f)
	for _, want := range []string{"at 4 callers: 310 of the load's requests not answered 2xx or 3xx (bad_status 310)", "never as answers",
		"at 4 callers: the service closed the load's connections: 3700 dials for its 4 callers"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "at 1 caller: the service closed") {
		t.Errorf("1 caller kept its connection:\n%s", b.String())
	}
}

// TestClosedText: a service that closes the load's connections is said
// with how often: Tomcat closes a kept-alive connection after its 100th
// request (maxKeepAliveRequests), and "each answer then paid for a
// connection's setup" said it of 3 dials in 800 requests.
func TestClosedText(t *testing.T) {
	for _, c := range []struct {
		conc            int
		dials, perClose float64
		want, not       string
	}{
		{1, 3, 115, "3 dials for its 1 caller, one closed every 115 requests", "each answer"},
		{4, 3200, 1, "each answer paid for a connection's setup", "every 1 requests"},
		{4, 8, 1000, "", ""}, // kept: twice its callers at most
	} {
		st := findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{}}, Dials: findings.Figure{c.dials}, PerClose: findings.Figure{c.perClose}}
		st.Step.Conc = c.conc
		got := AsIsClosed(st)
		if (c.want == "") != (got == "") || (got != "") != st.Closed() || !strings.Contains(got, c.want) || c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%d callers, %.0f dials, %.0f requests a close: %q, want %q", c.conc, c.dials, c.perClose, got, c.want)
		}
	}
}
