// Package palette gives each server one hue, the same on every chart of
// the report, the comparison and the stage: event-loop servers in reds and
// oranges, pools in blues and greens, a server of neither kind in greys
// and purples. A server keeps its hue by its place among the servers of
// its kind, in the order the run measured them.
package palette

import (
	"fmt"
	"strconv"
)

// The hues, each readable on white and on the stage's dark background.
var (
	Loops  = []string{"#d62728", "#f28e2b", "#b5177a", "#8c564b"}
	Pools  = []string{"#1f77b4", "#2ca02c", "#17becf", "#6a51a3"}
	Others = []string{"#9467bd", "#bcbd22", "#8c6d31", "#7f7f7f"}
	// Neutral draws what belongs to no server (Little's law, a key).
	Neutral = "#888888"
)

// Pale is how much paler a server's offloaded variant is drawn (Tint).
const Pale = 0.45

// Server is what a hue is chosen by.
type Server struct{ Name, Kind string }

// Of gives each server its hue, in order; a name seen twice keeps its
// first hue.
func Of(servers []Server) map[string]string {
	out := map[string]string{}
	n := map[string]int{}
	for _, s := range servers {
		if _, ok := out[s.Name]; ok {
			continue
		}
		hues := Others
		switch s.Kind {
		case "loop":
			hues = Loops
		case "pool":
			hues = Pools
		}
		out[s.Name] = hues[n[s.Kind]%len(hues)]
		n[s.Kind]++
	}
	return out
}

// Tint mixes hue with white: share 0 is the hue, 1 white. A hue that is
// not "#rrggbb" comes back as it is.
func Tint(hue string, share float64) string {
	if len(hue) != 7 || hue[0] != '#' {
		return hue
	}
	v, err := strconv.ParseUint(hue[1:], 16, 32)
	if err != nil {
		return hue
	}
	share = min(max(share, 0), 1)
	mix := func(c uint64) uint64 { return c + uint64(share*float64(255-c)+0.5) }
	return fmt.Sprintf("#%02x%02x%02x", mix(v>>16&0xff), mix(v>>8&0xff), mix(v&0xff))
}
