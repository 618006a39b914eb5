package watch

import (
	"encoding/xml"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

func readFixture(t *testing.T) *recording {
	t.Helper()
	f, err := os.Open("testdata/ledger-print.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := readRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadRecording: jfr print --json of a real recording (LedgerService:
// a thread dump, three socket reads on two loops, two idle parks of the
// pool): the reads' frame from the application's first, the peer, the
// parks known as waits for work.
func TestReadRecording(t *testing.T) {
	r := readFixture(t)
	if r.events != 6 || len(r.dumps) != 1 || len(r.holds) != 5 {
		t.Fatalf("%d events, %d dumps, %d holds", r.events, len(r.dumps), len(r.holds))
	}
	read := r.holds[0]
	if read.state != "in a socket read" || read.peer != "127.0.0.1:41417" || read.idle || read.thread != "nioEventLoopGroup-2-1" ||
		read.frames[0] != (culprit.Frame{Function: "LedgerClient.balance", Line: 24}) || read.frames[1].Function != "LedgerService.serve" {
		t.Errorf("read %+v", read)
	}
	if d := read.end.Sub(read.start); d != 5672187*time.Nanosecond {
		t.Errorf("read lasted %s", d)
	}
	park := r.holds[3]
	if !park.idle || park.thread != "http-nio-8080-exec-3" || !strings.HasPrefix(park.state, "parked on ") {
		t.Errorf("park %+v", park)
	}
}

// TestJudgeRecording: the real recording judged: the two loops held in
// the read, counted among the dump's two loops, the file from the dump;
// without a dump, the file inferred and said so.
func TestJudgeRecording(t *testing.T) {
	r := readFixture(t)
	from := r.holds[0].start.Add(-time.Second)
	s := culprit.Service{WindowNs: int64(10 * time.Second)}
	r.judge(&s, from, from.Add(10*time.Second))
	if s.Role != roleLoop || s.Pool || s.Serving != 2 || len(s.Holds) != 1 || len(s.Limits) != 0 {
		t.Fatalf("%+v", s)
	}
	h := s.Holds[0]
	if h.Held != 2 || h.Calls != 3 || h.FileInferred || h.Frames[0] != (culprit.Frame{Function: "LedgerClient.balance", File: "LedgerClient.java", Line: 24}) {
		t.Errorf("%+v", h)
	}
	if want := (5672187 + 8312195 + 5475761) * time.Nanosecond; time.Duration(h.HeldNs) != want || time.Duration(h.LongestNs) != 8312195*time.Nanosecond {
		t.Errorf("held %s, want %s", time.Duration(h.HeldNs), want)
	}
	// A window that ends inside the second read counts it to the end.
	s = culprit.Service{}
	r.judge(&s, r.holds[1].start, r.holds[1].start.Add(time.Millisecond))
	if len(s.Holds) != 1 || s.Holds[0].HeldNs != int64(time.Millisecond) {
		t.Errorf("clipped: %+v", s.Holds)
	}
	r.dumps = nil
	s = culprit.Service{}
	r.judge(&s, from, from.Add(10*time.Second))
	if len(s.Holds) != 1 || !s.Holds[0].FileInferred || s.Holds[0].Frames[0].File != "LedgerClient.java" || s.Serving != 2 || len(s.Limits) != 1 {
		t.Errorf("without a dump: %+v", s)
	}
	if f, inferred := javaFile("com.acme.Ledger$Client.balance", nil); f != "Ledger.java" || !inferred {
		t.Errorf("nested class: %s %v", f, inferred)
	}
}

// TestReadRecordingHostile: a stranger's recording: a field of another
// type costs that event only, a bad duration or time is skipped, long
// names are cut, a print past the cap is cut and said, and what is not
// the print's JSON is refused.
func TestReadRecordingHostile(t *testing.T) {
	long := strings.Repeat("x", 10*culprit.MaxText)
	in := `{"recording": {"events": [
	{"type": "jdk.SocketRead", "values": {"startTime": "2026-01-01T00:00:00Z", "duration": 5, "eventThread": {"javaName": "a"}}},
	{"type": "jdk.ThreadSleep", "values": {"startTime": "2026-01-01T00:00:00Z", "duration": "PT-1S", "eventThread": {"javaName": "b"}}},
	{"type": "jdk.ThreadSleep", "values": {"startTime": "yesterday", "duration": "PT1S", "eventThread": {"javaName": "c"}}},
	{"type": "jdk.ThreadSleep", "values": {"startTime": "2026-01-01T00:00:00Z", "duration": "PT1e300S", "eventThread": {"javaName": "d"}}},
	{"type": "jdk.SocketRead", "values": {"startTime": "2026-01-01T00:00:00Z", "duration": "PT0.005S", "address": 12, "port": "x",
	  "eventThread": {"javaName": "` + long + `"}, "stackTrace": {"frames": [{"method": {"type": {"name": "` + long + `"}, "name": "m"}, "lineNumber": -1}]}}}
	]}}`
	r, err := readRecording(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.events != 5 || len(r.holds) != 1 {
		t.Fatalf("%d events, holds %+v", r.events, r.holds)
	}
	h := r.holds[0]
	if len(h.thread) != culprit.MaxText || h.peer != "" || len(h.frames) != 1 || len(h.frames[0].Function) != culprit.MaxText || h.frames[0].Line != 0 {
		t.Errorf("kept %d-byte name, peer %q, frames %+v", len(h.thread), h.peer, len(h.frames))
	}
	if _, err := readRecording(strings.NewReader(`{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}`)); err == nil {
		t.Error("not the print's JSON, read")
	}
	saved := maxPrint
	defer func() { maxPrint = saved }()
	maxPrint = 400
	b, _ := os.ReadFile("testdata/ledger-print.json")
	r, err = readRecording(strings.NewReader(string(b)))
	if err != nil || !r.cut {
		t.Errorf("a print past the cap: cut %v, %v", r.cut, err)
	}
	for in, want := range map[string]time.Duration{"PT0.005923666S": 5923666, "PT1M2.5S": 62500 * time.Millisecond, "PT0S": 0, "PT1H": time.Hour} {
		if d, ok := isoDuration(in); !ok || d != want {
			t.Errorf("%s: %s %v", in, d, ok)
		}
	}
	for _, in := range []string{"", "P1D", "PT", "PTS", "PT-1S", "PT1e300S", "PT1X", "5"} {
		if d, ok := isoDuration(in); ok {
			t.Errorf("%q read as %s", in, d)
		}
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
