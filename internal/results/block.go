package results

import "github.com/bystander-kit/bystander/internal/protocol"

// Block is the blocking call's duration, one type from the flag to the
// wire and into the figures (protocol.Block).
type Block = protocol.Block

// BlockOf is the block step s asked for: the one road from run.json's
// params to a step. The sweep, offload and slip phases ask Block (the slip
// phase SlipBlock from SlipAtNs on), the stall, trace and cliff phases
// StallBlock; a server measured as it is is asked its own call (0).
func (p RunParams) BlockOf(s Step) Block {
	switch {
	case s.Server.AsIs():
		return 0
	case s.Phase == "stall" || s.Phase == "trace" || s.Phase == "cliff":
		return p.StallBlock
	default:
		return p.Block
	}
}

// SlipBlockOf is the block step s asks for from its SlipAtNs on: the slip
// phase's SlipBlock; 0 in the other phases.
func (p RunParams) SlipBlockOf(s Step) Block {
	if s.Phase != "slip" {
		return 0
	}
	return p.SlipBlock
}
