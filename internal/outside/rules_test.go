package outside

import "testing"

// TestNotHeldRules: each rule that clears a thread, by name, clears the
// thread it is about and no rule clears a held one; every rule has its
// case here.
func TestNotHeldRules(t *testing.T) {
	sleeping := place{kind: "call", call: "nanosleep"}
	fut := place{kind: "call", call: "futex"}
	idle := place{kind: "idle", call: "epoll_wait"}
	cpu := place{kind: "cpu"}
	judged := func(places, before []place, vm bool) *candidate {
		c := &candidate{places: places, before: before, vm: vm}
		for _, p := range places {
			if p.busy() {
				c.busy++
				c.at = p
			}
		}
		return c
	}
	cases := []struct {
		rule string // "": held
		c    *candidate
	}{
		{"", judged([]place{sleeping, sleeping, sleeping}, []place{idle, idle, idle}, false)},
		{"", judged([]place{fut, fut, idle}, []place{idle, idle, idle}, false)},
		{"", judged([]place{sleeping, sleeping}, nil, false)},
		{"looked at fewer than twice", judged([]place{sleeping}, []place{idle}, false)},
		{"busy at fewer than 2 in 3 looks", judged([]place{sleeping, idle, idle}, []place{idle}, false)},
		{"there before the blockers came", judged([]place{sleeping, sleeping, sleeping}, []place{sleeping, sleeping, idle}, false)},
		{"a futex, not after waiting for work", judged([]place{fut, fut, fut}, []place{cpu, cpu, idle}, false)},
		{"a futex, not after waiting for work", judged([]place{fut, fut, fut}, nil, false)},
		{"one of the JVM's own threads (a compiler, a collector)", judged([]place{cpu, cpu, cpu}, []place{idle, idle}, true)},
	}
	asked := map[string]bool{}
	for i, c := range cases {
		asked[c.rule] = true
		if got := clearedBy(c.c); got != c.rule {
			t.Errorf("case %d (%s): cleared by %q", i, c.rule, got)
		}
	}
	for _, r := range notHeld {
		if !asked[r.name] {
			t.Errorf("rule %q has no case", r.name)
		}
	}
}
