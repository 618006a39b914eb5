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
	// The dumps: every thread's role and the frames' files.
	roles, files := map[string]string{}, map[string]string{}
	var last []outside.JThread
	for _, d := range r.dumps {
		last = outside.Parse(d)
		for _, jt := range last {
			var fs []culprit.Frame
			for _, f := range jt.Frames {
				fs = append(fs, f.Frame)
				if f.File != "" && f.Line > 0 {
					files[className(f.Function)] = f.File
				}
			}
			if role := javaRole(jt.Name, fs); role != roleOther || roles[jt.Name] == "" {
				roles[jt.Name] = role
			}
		}
	}
	roleOf := func(thread, byFrames string) string {
		if role, ok := roles[thread]; ok && role != roleOther {
			return role
		}
		if byFrames != roleOther && byFrames != "" {
			return byFrames
		}
		return javaRole(thread, nil)
	}
	tallies := map[string]*tally{}
	full := false
	for k, h := range r.holds {
		role := roleOf(k.thread, k.stack.role)
		t := tallies[role]
		if t == nil {
			t = newTally()
			tallies[role] = t
		}
		frames, inferred := k.stack.frames, false
		if len(frames) > 0 {
			frames = append([]culprit.Frame(nil), frames...)
			frames[0].File, inferred = javaFile(frames[0].Function, files)
		}
		if !t.add(k.thread, k.state, k.peer, frames, inferred, h.ns, h.calls, h.longest) {
			full = true
		}
	}
	seen := map[string]map[string]bool{} // role -> the threads any event was on
	for thread, byFrames := range r.threads {
		role := roleOf(thread, byFrames)
		if seen[role] == nil {
			seen[role] = map[string]bool{}
		}
		seen[role][thread] = true
	}
	// The role: the serving role held most; where no serving thread is
	// known, any thread in the application's frames.
	role := servingRole(tallies, []string{roleLoop, rolePool}, func(c string) bool { return len(seen[c]) > 0 || hasRole(roles, c) })
	if role == "" {
		role = roleOther
		s.Limits = append(s.Limits, "watch: no thread that serves connections recognised (Netty's, Tomcat's, Jetty's, Undertow's or Vert.x's, by their frames or names): every thread held in the application's frames is named")
	}
	s.Role, s.Pool = role, role == rolePool
	if t := tallies[role]; t != nil {
		s.Holds = t.holds()
	}
	// How many threads of the role: those in the held threads' families
	// (Netty's acceptor group is not its worker group), from the last
	// dump, else those the recording saw.
	fams := map[string]bool{}
	for _, h := range s.Holds {
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
	for _, jt := range last {
		if roles[jt.Name] == role {
			inDump[jt.Name] = true
		}
	}
	if role != roleOther {
		s.Serving = count(inDump)
		if s.Serving == 0 {
			s.Serving = count(seen[role])
		}
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
