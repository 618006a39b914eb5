package results

import (
	"fmt"
	"time"
)

// Block is the blocking call's duration, the kit's central number, as one
// type from the flag to the wire and into the figures: a time.Duration
// underneath, a flag.Value (Set, String), and in JSON the nanoseconds
// run.json has always written (block_ns, stall_block_ns, slip_block_ns).
type Block time.Duration

// D is the block as a time.Duration.
func (b Block) D() time.Duration { return time.Duration(b) }

// String says the block as time.Duration does ("5ms").
func (b Block) String() string { return time.Duration(b).String() }

// Set parses a flag's value as time.ParseDuration does ("5ms", "1.5s").
func (b *Block) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 5ms: %w", err)
	}
	*b = Block(d)
	return nil
}

// Ms is the block in milliseconds, as the stage and the calculator say it.
func (b Block) Ms() float64 { return float64(b) / 1e6 }

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
