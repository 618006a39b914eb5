package prose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestNotWatched: a server measured as it is without pid= or pprof= is
// not watched, said in one line, with why: another machine (only pprof=
// reaches it), or neither given; one given either is watched.
func TestNotWatched(t *testing.T) {
	for _, tc := range []struct {
		s    results.Server
		want string
	}{
		{results.Server{Name: "a", Load: "GET /x", URL: "http://127.0.0.1:8080"}, "not watched: no pid= (nor pprof="},
		{results.Server{Name: "a", Load: "GET /x", URL: "http://10.1.2.3:8080"}, "not watched: the service is on another machine"},
		{results.Server{Name: "a", Load: "GET /x", URL: "http://10.1.2.3:8080", Pprof: "http://10.1.2.3:6060"}, ""},
		{results.Server{Name: "a", Load: "GET /x", URL: "http://127.0.0.1:8080", PID: 42}, ""},
		{results.Server{Name: "a", URL: "http://127.0.0.1:8080"}, ""}, // the protocol's: not measured as it is
	} {
		if got := NotWatched(tc.s); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestAsIsWatchedSaid: the Netty shop's watch says its 4 loops held first;
// Tomcat's, a pool's, that whether it forgave them is not told where the
// machine was too busy to judge its connections (findings'
// TestAsIsWatched reads them).
func TestAsIsWatchedSaid(t *testing.T) {
	f, err := findings.Read("../findings/testdata/asis-watch-run")
	if err != nil {
		t.Fatal(err)
	}
	shop, tshop := AsIsWatchLines(f.AsIs[0]), AsIsWatchLines(f.AsIs[1])
	if !strings.HasPrefix(shop[0], "4 of 4 event-loop threads held ") {
		t.Errorf("netty: %q", shop)
	}
	if AsIsWatchService(f.AsIs[1]).Forgiven != "" || !slices.ContainsFunc(tshop, func(l string) bool {
		return strings.HasPrefix(l, "whether the pool forgave them meanwhile is not told: machine too busy to judge")
	}) {
		t.Errorf("tomcat: %q", tshop)
	}
	if h := AsIsWatchHeading(f.AsIs[0].Watch); !strings.HasPrefix(h, "watched at 16 callers through Flight Recorder for ") {
		t.Errorf("heading %q", h)
	}
}

// TestAsIsWatchedTooLittle: a watch that covered 104 ms of a 1 s window
// (its start took the rest, seen in CI on a starved machine) and found no
// hold says it watched too little to judge, not that none held: "none of
// the 8 threads held past 1 ms over 104 ms" is true of what it saw, and a
// reader takes it for "nothing held". A watch over most of its window
// still says none held.
func TestAsIsWatchedTooLittle(t *testing.T) {
	watchOver := func(window time.Duration) findings.AsIs {
		st := &findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{Step: results.Step{Conc: 16, Duration: time.Second}}}}
		w := findings.AsIsWatch{Step: st, Service: &culprit.Service{Source: culprit.SourceProc, Role: "threads", Serving: 8, WindowNs: int64(window), ThresholdNs: int64(time.Millisecond)}}
		if window < 9*time.Second/10 {
			w.Short = window
		}
		return findings.AsIs{Watch: w}
	}
	lines := AsIsWatchLines(watchOver(104 * time.Millisecond))
	if len(lines) == 0 || lines[0] != "too little watched to judge: 104 ms of the 1.0 s window" || slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "held past") }) {
		t.Errorf("104 ms of 1 s watched, no hold: %q", lines)
	}
	if lines := AsIsWatchLines(watchOver(600 * time.Millisecond)); len(lines) == 0 || !strings.HasPrefix(lines[0], "none of the 8 threads held past 1.0 ms over 600 ms") {
		t.Errorf("600 ms of 1 s watched, no hold: %q", lines)
	}
}

// TestAsIsWatchForgiven: a pool whose connections none stalled while it
// was watched has its holds said forgiven, with their median wait over
// their wait unloaded (one prober's, from the send: not the interval
// bystander's from due); the watch's own Service (findings') is left as
// the file had it.
func TestAsIsWatchForgiven(t *testing.T) {
	st := &findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{Step: results.Step{Conc: 16, Duration: time.Second}}}, Probed: findings.Figure{12}, Stalled: findings.Figure{0}}
	st.Fast.P50 = findings.Figure{6000} // another prober's, from due: not divided
	st.OthersWait = findings.Figure{600}
	svc := &culprit.Service{Source: culprit.SourceJFR, Role: "request threads", Pool: true, Serving: 200, WindowNs: int64(time.Second), ThresholdNs: int64(time.Millisecond),
		Holds: []culprit.Hold{{State: "in a socket read", Held: 16, HeldNs: int64(8 * time.Second), Calls: 1000}}}
	a := findings.AsIs{Steps: []findings.AsIsStep{{Unloaded: findings.Figure{400}}}, Watch: findings.AsIsWatch{Step: st, Service: svc, Forgiven: true}}
	want := "; held, and forgiven (none of its 12 connections stalled meanwhile, their median wait 1.5x their wait unloaded)"
	if l := AsIsWatchLines(a); len(l) == 0 || !strings.HasSuffix(l[0], want) {
		t.Errorf("forgiven: %q", l)
	}
	if svc.Forgiven != "" {
		t.Errorf("the watch's Service changed: %q", svc.Forgiven)
	}
	a.Watch.Forgiven, st.Stalled = false, findings.Figure{2}
	if l := AsIsWatchLines(a); len(l) < 2 || strings.Contains(l[0], "forgiven") || l[1] != "held, and not forgiven: 2 of 12 of its connections stalled meanwhile" {
		t.Errorf("not forgiven: %q", l)
	}
}

// TestAsIsUnjudgedSaid: a repetition not judged is said with why: the 12
// connections' window began late or early (findings' Offset), or the
// stall rule's words; "repetition N: " first when the step had several;
// the stalled column says "machine too busy to judge" only when the
// machine was.
func TestAsIsUnjudgedSaid(t *testing.T) {
	one := findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{Reps: []findings.Rep{{}}}}}
	two := findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{Reps: []findings.Rep{{}, {}}}}}
	for _, tc := range []struct {
		st   findings.AsIsStep
		u    findings.AsIsUnjudged
		want string
	}{
		{one, findings.AsIsUnjudged{Repeat: 1, Offset: 400 * time.Millisecond}, "the 12 connections' window began 400ms after the load's (their prober placed them late)"},
		{one, findings.AsIsUnjudged{Repeat: 1, Offset: -250 * time.Millisecond}, "the 12 connections' window began 250ms before the load's (the load started late)"},
		{two, findings.AsIsUnjudged{Repeat: 2, Busy: true, Why: "machine too busy to judge: x"}, "repetition 2: machine too busy to judge: x"},
	} {
		if got := AsIsUnjudged(tc.st, tc.u); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.u, got, tc.want)
		}
		tc.st.Unjudged = []findings.AsIsUnjudged{tc.u}
		if got, busy := AsIsStalled(tc.st), tc.u.Busy; (got == "machine too busy to judge") != busy || (got == "not judged") == busy {
			t.Errorf("%+v: stalled %q", tc.u, got)
		}
	}
}

// TestAsIsWatchNotForgivenTwice: a watch file whose Service carries a
// forgiveness of its own (a stranger's file may) on a pool whose
// connections stalled is said not forgiven, never forgiven as well.
func TestAsIsWatchNotForgivenTwice(t *testing.T) {
	st := &findings.AsIsStep{LoadRow: findings.LoadRow{Group: &findings.Group{Step: results.Step{Conc: 16, Duration: time.Second}}}, Probed: findings.Figure{12}, Stalled: findings.Figure{2}}
	svc := &culprit.Service{Source: culprit.SourceJFR, Role: "request threads", Pool: true, Serving: 200, WindowNs: int64(time.Second), ThresholdNs: int64(time.Millisecond),
		Holds: []culprit.Hold{{State: "in a socket read", Held: 16, HeldNs: int64(8 * time.Second), Calls: 1000}}, Forgiven: "the file says so"}
	a := findings.AsIs{Steps: []findings.AsIsStep{{Unloaded: findings.Figure{400}}}, Watch: findings.AsIsWatch{Step: st, Service: svc}}
	all := strings.Join(AsIsWatchLines(a), "\n")
	if strings.Contains(all, "held, and forgiven") || !strings.Contains(all, "held, and not forgiven") {
		t.Errorf("stalled, yet said forgiven:\n%s", all)
	}
}
