package prose

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestStallTooBusySaid: a stall row the rule could not judge says why in
// the tables, under its server, and no count in its row (findings'
// TestStallTooBusy computes the row).
func TestStallTooBusySaid(t *testing.T) {
	step := results.Step{ID: "stall-loop-gnet-k1", Phase: "stall", K: 1, Server: results.Server{Name: "loop-gnet", Kind: "loop"}}
	why := "machine too busy to judge: connection 1 (loop 1) waited 14ms"
	f := &findings.Findings{Run: &results.Run{}, Stall: []findings.StallRow{{Group: &findings.Group{Step: step}, Unjudged: []string{why}}}}
	var sb strings.Builder
	WriteTables(&sb, f)
	if !strings.Contains(sb.String(), "k=1 loop-gnet: "+why) {
		t.Errorf("the tables do not say why:\n%s", sb.String())
	}
	if !regexp.MustCompile(`\n1 +loop-gnet +machine too busy to judge +- +- +- `).MatchString(sb.String()) {
		t.Errorf("the row does not say it was not judged:\n%s", sb.String())
	}
}
