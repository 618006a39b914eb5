package experiment

import (
	"fmt"
)

// screenOf says which screen shows a step: 1 the sweep's throughput, 2
// the bystander beside /slow on the loops and on the pool, 3 one loop
// blocked seen from inside (its lag), 4 the connections as k loops are
// blocked (a slide per k: slidesOf), 5 the fix, 6 the bad afternoon
// (the call slowed at the presenter's key, a slide per server).
func screenOf(s Step) int {
	switch {
	case s.Phase == "sweep":
		return 1
	case s.Phase == "slip":
		return 6
	case s.Phase == "offload" && s.Variant == "offloaded":
		return 5
	case s.Phase == "offload":
		return 2
	case s.Phase == "stall" && s.Server.Kind == "loop" && s.K == 1:
		return 3
	}
	return 4
}

// slide is what one key shows: a screen, or on screen 4 one k of one
// server (focus). steps are what it measures; a focus is measured when
// shown unless an earlier slide measured it (k = 1 of a loop server: its
// lag is screen 3, its connections the first slide of screen 4).
type slide struct {
	screen int
	focus  *Step
	steps  []Step
}

func (s slide) focusID() string {
	if s.focus == nil {
		return ""
	}
	return s.focus.ID
}

// slidesOf is the talk: screens 1 to 6 in order; screen 4 a slide per k
// from 1 up, the loop servers' first (3 of 12 stall, then 6, 9, 12), then
// the servers without loops (as many blocked, none stalls); screen 6 a
// slide per server's slip, the loops' first.
func slidesOf(steps []Step) []slide {
	var out []slide
	for n := 1; n <= screens; n++ {
		// Screens 4 and 6 show one step a slide: each k of the stall from
		// 1 up, each server's slip; the loop servers' first.
		one := map[int]string{4: "stall", 6: "slip"}[n]
		if one != "" {
			for _, loops := range []bool{true, false} {
				for i, s := range steps {
					if s.Phase == one && (s.Phase != "stall" || s.K > 0) && (s.Server.Kind == "loop") == loops {
						out = append(out, slide{screen: n, focus: &steps[i]})
					}
				}
			}
			continue
		}
		sl := slide{screen: n}
		for _, s := range steps {
			if screenOf(s) == n {
				sl.steps = append(sl.steps, s)
			}
		}
		if len(sl.steps) > 0 {
			out = append(out, sl)
		}
	}
	return out
}

// nowText says in words what a step measures, for the footer: "now:
// pool at 64 callers", "now: loop-gnet, 2 of 4 loops blocked".
func nowText(s Step, loops int) string {
	n := s.Server.Name
	switch {
	case s.Phase == "stall" && s.Server.Kind == "loop":
		if s.Server.Workers > 0 {
			loops = s.Server.Workers // a server's own loops (Netty's, a --target's)
		}
		return fmt.Sprintf("now: %s, %d of %d loops blocked", n, s.K, loops)
	case s.Phase == "stall":
		return fmt.Sprintf("now: %s, %d callers blocked", n, s.K)
	case s.Phase == "offload" && s.Variant == "blocking":
		return fmt.Sprintf("now: %s, the call on its loops, %d callers", n, s.Conc)
	case s.Phase == "offload" && s.Variant == "offloaded":
		return fmt.Sprintf("now: %s, the call offloaded, %d callers", n, s.Conc)
	case s.Phase == "slip":
		return fmt.Sprintf("now: %s at %d callers, the call %s: \u2192 slows it to %s", n, s.Conc, s.Block.D(), s.SlipBlock.D())
	}
	return fmt.Sprintf("now: %s at %d callers", n, s.Conc)
}

// talkSlides is the talk a run gives: the kit's (slidesOf), or, on
// services measured as they are (--load), asIsSlides.
func talkSlides(o Options, steps []Step) []slide {
	if o.Load != "" {
		return asIsSlides(steps)
	}
	return slidesOf(steps)
}

// asIsSlides is the talk on services measured as they are: screen 1 their
// sweep; screen 2 the bystander's waits while the
// load ran at the sweep's top callers (that step, shown as screen 1
// measured it, side by side); screens 3 to 6 a slide each that measures nothing and says
// why (asIsScreenSkips): they need the kit's protocol.
func asIsSlides(steps []Step) []slide {
	one := slide{screen: 1}
	top := map[string]int{} // each service's top step, unwatched
	var order []string
	for i, s := range steps {
		if s.Phase != "sweep" {
			continue
		}
		one.steps = append(one.steps, s)
		if s.Variant != "" {
			continue
		}
		j, ok := top[s.Server.Name]
		if !ok {
			order = append(order, s.Server.Name)
		}
		if !ok || s.Conc > steps[j].Conc {
			top[s.Server.Name] = i
		}
	}
	if len(one.steps) == 0 {
		return nil
	}
	out := []slide{one}
	// One slide: it shows every service's top step, the first's its focus.
	out = append(out, slide{screen: 2, focus: &steps[top[order[0]]]})
	for n := 3; n <= screens; n++ {
		out = append(out, slide{screen: n})
	}
	return out
}

// asIsScreenSkips says, for the room, why each screen that needs the
// kit's protocol shows nothing of a service measured as it is: one line,
// in the room's words, naming the service's requests (load, bystander).
func asIsScreenSkips(load, bystander string) map[int]string {
	return map[int]string{
		3: "Your service's own endpoints: no loop placement to show. The kit's servers report their loops' beats; a service measured as it is need not.",
		4: "Blocking one loop at a time needs the kit's own call. Which of the 12 " + bystander + " connections stalled at each step of the sweep is in the report.",
		5: "The fix moves the kit's own call off the loop. " + load + " is your service's own: its fix is yours to make, then measure again.",
		6: "Slowing the call at a key needs the kit's own call: " + load + " takes the time your service gives it.",
	}
}
