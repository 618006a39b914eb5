package outside

import (
	"os"
	"strings"
	"testing"
)

func readDump(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseNetty: a real Netty dump (2 of 4 loops in Thread.sleep): whole
// names, native ids, states, and the application's frames from the first
// that is not the JDK's.
func TestParseNetty(t *testing.T) {
	jts := Parse(readDump(t, "netty-2-held.txt"))
	if len(jts) != 25 {
		t.Fatalf("%d threads, want 25", len(jts))
	}
	by := map[string]JThread{}
	for _, jt := range jts {
		by[jt.Name] = jt
	}
	l3 := by["nioEventLoopGroup-3-3"]
	if l3.TID != 0x6e01 || l3.State != "TIMED_WAITING (sleeping)" || l3.Call() != "Thread.sleep" || !inCall(l3) {
		t.Errorf("loop 3-3: %+v", l3)
	}
	own := l3.Own()
	if len(own) == 0 || own[0].Function != "bystander.Protocol.block" || own[0].File != "Protocol.java" || own[0].Line != 36 {
		t.Errorf("loop 3-3's own frames: %+v", own)
	}
	if !l3.Frames[0].JDK || l3.Frames[1].JDK {
		t.Errorf("JDK frames: %+v", l3.Frames[:2])
	}
	if l1 := by["nioEventLoopGroup-3-1"]; inCall(l1) || !waitsForWork(l1) {
		t.Errorf("an idle loop in a call: %+v", l1)
	}
	if gc := by["GC Thread#0"]; gc.TID != 0x6db9 || len(gc.Frames) != 0 || gc.State != "" {
		t.Errorf("a VM thread: %+v", gc)
	}
	if m := by["main"]; m.State != "WAITING (on object monitor)" || inCall(m) {
		t.Errorf("main: %+v", m)
	}
}

// TestThreadHead: names with quotes and spaces, and lines that are not a
// thread's.
func TestThreadHead(t *testing.T) {
	for _, c := range []struct{ line, name string }{
		{`"a "quoted" name" #3 daemon prio=5 os_prio=0 tid=0x1 nid=0x2a runnable`, `a "quoted" name`},
		{`"GC Thread#0" os_prio=0 cpu=7.20ms elapsed=16.34s tid=0x00007f772c0418f0 nid=0x6db9 runnable  `, "GC Thread#0"},
		{`"x"`, "x"},
	} {
		name, rest, ok := threadHead(c.line)
		if !ok || name != c.name {
			t.Errorf("%q: %q %v", c.line, name, ok)
		}
		if strings.Contains(c.line, "nid=0x2a") && nid(rest) != 42 {
			t.Errorf("%q: nid %d", c.line, nid(rest))
		}
	}
	if _, _, ok := threadHead(`"unterminated`); ok {
		t.Error("an unterminated name parsed")
	}
}

// FuzzParse: whatever a stranger's dump holds, Parse keeps to its caps.
func FuzzParse(f *testing.F) {
	f.Add(readDump(f, "netty-2-held.txt"))
	f.Add("\"a\" nid=0xzz\n   java.lang.Thread.State: X\n\tat (\n\tat a.b(c:d:e)\n")
	f.Fuzz(func(t *testing.T, s string) {
		jts := Parse(s)
		if len(jts) > MaxJThreads {
			t.Fatalf("%d threads", len(jts))
		}
		for _, jt := range jts {
			if len(jt.Frames) > MaxJFrames || len(jt.Name) > maxText || jt.TID < 0 {
				t.Fatalf("%+v", jt)
			}
			for _, f := range jt.Own() {
				if f.Line < 0 || len(f.Function) > maxText || len(f.File) > maxText {
					t.Fatalf("%+v", f)
				}
			}
			_ = jt.Call()
		}
	})
}

// TestPerfCounters: a real JVM's performance data file gives its safepoint
// counters; what is not one gives an error.
func TestPerfCounters(t *testing.T) {
	b, err := os.ReadFile("testdata/hsperfdata")
	if err != nil {
		t.Fatal(err)
	}
	c, err := perfCounters(b, "sun.rt.safepointTime", "sun.rt.safepoints", "sun.os.hrt.frequency")
	if err != nil {
		t.Fatal(err)
	}
	if c[0] <= 0 || c[1] <= 0 || c[2] != 1e9 {
		t.Errorf("counters %v", c)
	}
	if _, err := perfCounters(b[:100], "sun.rt.safepoints"); err == nil {
		t.Error("a cut file read")
	}
	if _, err := perfCounters([]byte("not a JVM's"), "x"); err == nil {
		t.Error("a stranger's file read")
	}
}

// FuzzPerfCounters: any bytes, no panic.
func FuzzPerfCounters(f *testing.F) {
	b, err := os.ReadFile("testdata/hsperfdata")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = perfCounters(b, "sun.rt.safepoints")
	})
}
