package watch

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// judge fills s from the recording: the serving threads' holds that are
// not waits for work, by place, in the role most held (event loops, a
// pool's request threads, or, where no serving thread is known, any
// thread in the application's frames).
func (r *recording) judge(s *culprit.Service) {
	d := readDumps(r.dumps)
	tallies, full := r.tallies(d)
	seen := r.seen(d)
	// The role: the serving role held most; where no serving thread is
	// known, any thread in the application's frames.
	role := servingRole(tallies, []string{roleLoop, rolePool}, func(c string) bool { return len(seen[c]) > 0 || hasRole(d.roles, c) })
	if role == "" {
		role = roleOther
		s.Limits = append(s.Limits, "watch: no thread that serves connections recognised (Netty's, Tomcat's, Jetty's, Undertow's or Vert.x's, by their frames or names): every thread held in the application's frames is named")
	}
	s.Role, s.Pool = role, role == rolePool
	if t := tallies[role]; t != nil {
		s.Holds = t.holds()
	}
	if role != roleOther {
		s.Serving = d.serving(role, s.Holds, seen[role])
	}
	if len(r.dumps) == 0 {
		s.Limits = append(s.Limits, "watch: Flight Recorder gave no thread dump (jdk.ThreadDump): serving threads known by name only, frames' files inferred")
	}
	if r.dropped > 0 {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d distinct holds in the recording: the first counted", maxHolds))
	}
	if full {
		s.Limits = append(s.Limits, fmt.Sprintf("watch: more than %d places held: the first counted", MaxPlaces))
	}
}

// dumped is what the recording's thread dumps say: every thread's role,
// the files of the frames' classes, and the last dump's threads.
type dumped struct {
	roles, files map[string]string
	last         []outside.JThread
}

// readDumps reads the dumps in order: a thread keeps the serving role any
// of them gave it.
func readDumps(dumps []string) dumped {
	d := dumped{roles: map[string]string{}, files: map[string]string{}}
	for _, dump := range dumps {
		d.last = outside.Parse(dump)
		for _, jt := range d.last {
			var fs []culprit.Frame
			for _, f := range jt.Frames {
				fs = append(fs, f.Frame)
				if f.File != "" && f.Line > 0 {
					d.files[className(f.Function)] = f.File
				}
			}
			if role := javaRole(jt.Name, fs); role != roleOther || d.roles[jt.Name] == "" {
				d.roles[jt.Name] = role
			}
		}
	}
	return d
}

// roleOf is a thread's role: the dumps' serving role, else the one its
// event's frames say (byFrames), else its name's.
func (d dumped) roleOf(thread, byFrames string) string {
	if role, ok := d.roles[thread]; ok && role != roleOther {
		return role
	}
	if byFrames != roleOther && byFrames != "" {
		return byFrames
	}
	return javaRole(thread, nil)
}

// tallies counts the holds by their thread's role, each hold's culprit
// frame with its file (the dumps', else inferred); full says a place was
// left out, MaxPlaces counted already.
func (r *recording) tallies(d dumped) (tallies map[string]*tally, full bool) {
	tallies = map[string]*tally{}
	for k, h := range r.holds {
		role := d.roleOf(k.thread, k.stack.role)
		t := tallies[role]
		if t == nil {
			t = newTally()
			tallies[role] = t
		}
		frames, inferred := k.stack.frames, false
		if len(frames) > 0 {
			frames = append([]culprit.Frame(nil), frames...)
			frames[0].File, inferred = javaFile(frames[0].Function, d.files)
		}
		if !t.add(k.thread, k.state, k.peer, frames, inferred, h.ns, h.calls, h.longest) {
			full = true
		}
	}
	return tallies, full
}

// seen is, by role, the threads any event was on.
func (r *recording) seen(d dumped) map[string]map[string]bool {
	seen := map[string]map[string]bool{}
	for thread, byFrames := range r.threads {
		role := d.roleOf(thread, byFrames)
		if seen[role] == nil {
			seen[role] = map[string]bool{}
		}
		seen[role][thread] = true
	}
	return seen
}

// serving is how many threads of role serve: those in the held threads'
// families (Netty's acceptor group is not its worker group), from the
// last dump, else those the recording saw (seen).
func (d dumped) serving(role string, holds []culprit.Hold, seen map[string]bool) int {
	fams := map[string]bool{}
	for _, h := range holds {
		for _, n := range h.Threads {
			fams[outside.Family(n)] = true
		}
	}
	count := func(names map[string]bool) int {
		n := 0
		for name := range names {
			if len(fams) == 0 || fams[outside.Family(name)] {
				n++
			}
		}
		return n
	}
	inDump := map[string]bool{}
	for _, jt := range d.last {
		if d.roles[jt.Name] == role {
			inDump[jt.Name] = true
		}
	}
	if n := count(inDump); n > 0 {
		return n
	}
	return count(seen)
}
