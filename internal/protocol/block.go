package protocol

import (
	"fmt"
	"time"
)

// Block is the blocking call's duration, the kit's central number, as one
// type from the flag to the wire and into the figures: the servers'
// --block and a request's ?block=, the experiment's flags, and run.json
// (results.Block is this type). A time.Duration underneath, a flag.Value
// (Set, String), and in JSON the nanoseconds run.json has always written
// (block_ns, stall_block_ns, slip_block_ns).
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
