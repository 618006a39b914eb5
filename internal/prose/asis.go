package prose

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a server measured as it is, said from the figures
// findings' asis.go computes.

// AsIsClosed says that the service closed the load's connections, when it
// did (its callers dialled more than twice each): "" when it kept them.
func AsIsClosed(st findings.AsIsStep) string {
	if !st.Closed() {
		return ""
	}
	closed := fmt.Sprintf("the service closed the load's connections: %s dials for its %s", num(st.Dials, "%.0f"), words.Plural(st.Step.Conc, "caller"))
	if !st.PerClose.OK() || st.PerClose.Median() < 2 {
		return closed + ": each answer paid for a connection's setup"
	}
	// Tomcat closes a kept-alive connection after its 100th request
	// (maxKeepAliveRequests): a setup that often costs little.
	return fmt.Sprintf("%s, one closed every %s requests", closed, num(st.PerClose, "%.0f"))
}

// AsIsPlateau is its highest throughput and where: "17,189 req/s at 64
// callers", or "not measured".
func AsIsPlateau(a findings.AsIs) string {
	if a.Plateau <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%s at %s", words.PerS(a.Plateau), words.Plural(a.PlateauAt, "caller"))
}
