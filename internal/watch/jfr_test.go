package watch

import (
	"encoding/xml"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// fixture is testdata/ledger-digest.jsonl read over a window from..to:
// JfrDigest's stream of a real recording of LedgerService (its stacks, two
// idle parks of the pool, three socket reads on two loops, a thread dump).
func fixture(t *testing.T, from, to time.Time) *recording {
	t.Helper()
	f, err := os.Open("testdata/ledger-digest.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := readDigest(f, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The fixture's first read, on nioEventLoopGroup-2-2, and its reads'
// durations.
var (
	fixtureStart = time.Unix(0, 1796292784663336419)
	fixtureReads = []time.Duration{5672187, 8312195, 5475761}
)

// TestReadDigest: the real recording's digest: the reads counted by
// thread and stack, the frame from the application's first, the peer;
// the pool's parks are waits for work and not counted, their threads
// still seen; the dump kept.
func TestReadDigest(t *testing.T) {
	r := fixture(t, fixtureStart.Add(-time.Second), fixtureStart.Add(time.Second))
	if r.events != 5 || len(r.dumps) != 1 || len(r.stacks) != 2 || len(r.holds) != 2 {
		t.Fatalf("%d events, %d dumps, %d stacks, %d holds", r.events, len(r.dumps), len(r.stacks), len(r.holds))
	}
	for k, h := range r.holds {
		if k.state != "in a socket read" || k.peer != "127.0.0.1:41417" || k.stack.idle ||
			k.stack.frames[0] != (culprit.Frame{Function: "LedgerClient.balance", Line: 24}) || k.stack.frames[1].Function != "LedgerService.serve" {
			t.Errorf("%+v %+v", k, k.stack)
		}
		if want := map[string]int{"nioEventLoopGroup-2-1": 1, "nioEventLoopGroup-2-2": 2}[k.thread]; h.calls != want {
			t.Errorf("%s: %d calls, want %d", k.thread, h.calls, want)
		}
	}
	if _, ok := r.threads["http-nio-8080-exec-2"]; !ok || len(r.threads) != 3 {
		t.Errorf("threads seen: %v", r.threads)
	}
}

// TestJudgeRecording: the real recording judged: the two loops held in
// the read, counted among the dump's two loops, the file from the dump; a
// window that ends inside a read counts it to the window's end; without a
// dump, the file is inferred and said so.
func TestJudgeRecording(t *testing.T) {
	from := fixtureStart.Add(-time.Second)
	s := culprit.Service{WindowNs: int64(2 * time.Second)}
	fixture(t, from, from.Add(2*time.Second)).judge(&s)
	if s.Role != roleLoop || s.Pool || s.Serving != 2 || len(s.Holds) != 1 || len(s.Limits) != 0 {
		t.Fatalf("%+v", s)
	}
	h := s.Holds[0]
	if h.Held != 2 || h.Calls != 3 || h.FileInferred || h.Frames[0] != (culprit.Frame{Function: "LedgerClient.balance", File: "LedgerClient.java", Line: 24}) {
		t.Errorf("%+v", h)
	}
	if want := fixtureReads[0] + fixtureReads[1] + fixtureReads[2]; time.Duration(h.HeldNs) != want || time.Duration(h.LongestNs) != fixtureReads[1] {
		t.Errorf("held %s, want %s", time.Duration(h.HeldNs), want)
	}
	s = culprit.Service{}
	fixture(t, fixtureStart, fixtureStart.Add(time.Millisecond)).judge(&s)
	if len(s.Holds) != 1 || s.Holds[0].HeldNs != int64(time.Millisecond) || s.Holds[0].Calls != 1 || s.Holds[0].Held != 1 {
		t.Errorf("clipped: %+v", s.Holds)
	}
	r := fixture(t, from, from.Add(2*time.Second))
	r.dumps = nil
	s = culprit.Service{}
	r.judge(&s)
	if len(s.Holds) != 1 || !s.Holds[0].FileInferred || s.Holds[0].Frames[0].File != "LedgerClient.java" || s.Serving != 2 || len(s.Limits) != 1 {
		t.Errorf("without a dump: %+v", s)
	}
	if f, inferred := javaFile("com.acme.Ledger$Client.balance", nil); f != "Ledger.java" || !inferred {
		t.Errorf("nested class: %s %v", f, inferred)
	}
}

// TestReadDigestHostile: what a stranger's recording can put in the
// digest: a field of another type costs that item only, a negative
// duration or an unknown stack counts nothing wrong, long names are cut,
// a digest past the cap is cut and said, and what is not JSON is refused.
func TestReadDigestHostile(t *testing.T) {
	long := strings.Repeat("x", 10*culprit.MaxText)
	in := `{"stack":1,"frames":[{"c":"` + long + `","m":"m","l":-1}]}
	{"event":"jdk.SocketRead","start":"now","dur":5,"thread":"a","stack":1}
	{"event":"jdk.ThreadSleep","start":0,"dur":-5,"thread":"b","stack":1}
	{"event":"jdk.ThreadSleep","start":0,"dur":1000,"thread":"c","stack":99}
	{"event":"jdk.SocketRead","start":0,"dur":1000,"thread":"` + long + `","stack":1,"peer":"` + long + `"}
	{"stack":-4,"frames":[]}`
	r, err := readDigest(strings.NewReader(in), time.Unix(0, 0), time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.events != 3 || len(r.holds) != 2 || len(r.stacks) != 1 {
		t.Fatalf("%d events, %d holds, %d stacks", r.events, len(r.holds), len(r.stacks))
	}
	for k, h := range r.holds {
		if len(k.thread) > culprit.MaxText || len(k.peer) > culprit.MaxText || h.ns != 1000 {
			t.Errorf("kept %d-byte name, %d-byte peer, %d ns", len(k.thread), len(k.peer), h.ns)
		}
		if k.thread != "c" && (len(k.stack.frames) != 1 || len(k.stack.frames[0].Function) != culprit.MaxText || k.stack.frames[0].Line != 0) {
			t.Errorf("frames %+v", k.stack.frames)
		}
	}
	if _, err := readDigest(strings.NewReader(`{"event": nope}`), time.Time{}, time.Time{}); err == nil {
		t.Error("not JSON, read")
	}
	saved := maxPrint
	defer func() { maxPrint = saved }()
	maxPrint = 400
	b, _ := os.ReadFile("testdata/ledger-digest.jsonl")
	r, err = readDigest(strings.NewReader(string(b)), time.Time{}, time.Now())
	if err != nil || !r.cut {
		t.Errorf("a digest past the cap: cut %v, %v", r.cut, err)
	}
}

// TestJFC: the settings are a .jfc file: every event past the threshold
// with its stack, and the thread dumps.
func TestJFC(t *testing.T) {
	type jfc struct {
		Events []struct {
			Name     string `xml:"name,attr"`
			Settings []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:",chardata"`
			} `xml:"setting"`
		} `xml:"event"`
	}
	for th, want := range map[time.Duration]string{time.Millisecond: "1 ms", 500 * time.Microsecond: "500 us", 20 * time.Millisecond: "20 ms"} {
		var c jfc
		if err := xml.Unmarshal(JFC(th), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.Events) != len(jfrEvents)+1 {
			t.Fatalf("%d events", len(c.Events))
		}
		for _, e := range c.Events[:len(jfrEvents)] {
			got := map[string]string{}
			for _, s := range e.Settings {
				got[s.Name] = s.Value
			}
			if got["enabled"] != "true" || got["stackTrace"] != "true" || got["threshold"] != want {
				t.Errorf("%s: %v", e.Name, got)
			}
		}
	}
}

// TestReadDigestCutAtAnItemsEnd: a digest cut by the cap where one item
// ends (with its newline or without) is cut all the same: the items after
// it are not read, and the digest must not be left waiting to write them.
// Only a digest that ends within the cap is read whole.
func TestReadDigestCutAtAnItemsEnd(t *testing.T) {
	b, err := os.ReadFile("testdata/ledger-digest.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	saved := maxPrint
	defer func() { maxPrint = saved }()
	first := strings.IndexByte(string(b), '\n')
	for _, n := range []int{first, first + 1} {
		maxPrint = int64(n)
		r, err := readDigest(strings.NewReader(string(b)), time.Time{}, time.Now())
		if err != nil || !r.cut || len(r.stacks) != 1 {
			t.Errorf("cut at %d of %d bytes: cut %v, %d stacks, %v", n, len(b), r.cut, len(r.stacks), err)
		}
	}
	maxPrint = int64(len(b))
	if r, err := readDigest(strings.NewReader(string(b)), time.Time{}, time.Now()); err != nil || r.cut {
		t.Errorf("a digest of the cap's size: cut %v, %v", r.cut, err)
	}
}
