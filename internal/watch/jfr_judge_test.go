package watch

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// TestReadDumps: a thread keeps the serving role an earlier dump gave it
// when a later one's frames say none; a frame's file is kept only with its
// line (not "Native Method"); the last dump's threads are the last.
func TestReadDumps(t *testing.T) {
	first := "\"worker-1\" #20 prio=5 os_prio=0 tid=0x1 nid=0x10 runnable\n" +
		"   java.lang.Thread.State: RUNNABLE\n" +
		"\tat com.acme.Ledger.read(Ledger.java:12)\n" +
		"\tat io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:569)\n\n" +
		"\"main\" #1 prio=5 os_prio=0 tid=0x2 nid=0x11 in Object.wait()\n" +
		"   java.lang.Thread.State: WAITING (on object monitor)\n" +
		"\tat java.lang.Object.wait(Native Method)\n\n"
	second := "\"worker-1\" #20 prio=5 os_prio=0 tid=0x1 nid=0x10 runnable\n" +
		"   java.lang.Thread.State: RUNNABLE\n" +
		"\tat java.lang.Thread.run(Thread.java:840)\n\n"
	d := readDumps([]string{first, second})
	if d.roles["worker-1"] != roleLoop || d.roles["main"] != roleOther || len(d.roles) != 2 {
		t.Errorf("roles %v", d.roles)
	}
	if d.files["com.acme.Ledger"] != "Ledger.java" || d.files["java.lang.Thread"] != "Thread.java" || len(d.files) != 3 {
		t.Errorf("files %v", d.files)
	}
	if len(d.last) != 1 || d.last[0].Name != "worker-1" {
		t.Errorf("last dump %+v", d.last)
	}
	if d := readDumps(nil); len(d.roles) != 0 || d.last != nil {
		t.Errorf("no dump: %+v", d)
	}
}

// TestRoleOf: a thread's role is the dumps' serving role, else its
// event's frames', else its name's.
func TestRoleOf(t *testing.T) {
	d := dumped{roles: map[string]string{"worker-1": roleLoop, "main": roleOther}}
	for _, c := range []struct{ thread, byFrames, want string }{
		{"worker-1", rolePool, roleLoop},              // the dump's
		{"main", rolePool, rolePool},                  // the dump knows none: the frames'
		{"http-nio-8080-exec-3", "", rolePool},        // the name's
		{"http-nio-8080-exec-3", roleOther, rolePool}, // the frames say none: the name's
		{"stranger", roleOther, roleOther},
	} {
		if got := d.roleOf(c.thread, c.byFrames); got != c.want {
			t.Errorf("roleOf(%q, %q) = %q, want %q", c.thread, c.byFrames, got, c.want)
		}
	}
}

// TestServing: the serving threads counted are those of the held
// threads' families in the last dump (Netty's acceptor group is not its
// worker group), all of the role without holds, and those the recording
// saw when the last dump has none of the role.
func TestServing(t *testing.T) {
	d := dumped{
		roles: map[string]string{"nioEventLoopGroup-2-1": roleLoop, "nioEventLoopGroup-3-1": roleLoop,
			"nioEventLoopGroup-3-2": roleLoop, "http-nio-8080-exec-1": rolePool},
		last: []outside.JThread{{Name: "nioEventLoopGroup-2-1"}, {Name: "nioEventLoopGroup-3-1"},
			{Name: "nioEventLoopGroup-3-2"}, {Name: "http-nio-8080-exec-1"}},
	}
	held := []culprit.Hold{{Threads: []string{"nioEventLoopGroup-3-2"}}}
	if n := d.serving(roleLoop, held, nil); n != 2 {
		t.Errorf("the held group's loops: %d, want 2", n)
	}
	if n := d.serving(roleLoop, nil, nil); n != 3 {
		t.Errorf("every loop without holds: %d, want 3", n)
	}
	seen := map[string]bool{"qtp1-1": true, "qtp1-2": true, "other-1": true}
	if n := d.serving("pool of another", []culprit.Hold{{Threads: []string{"qtp1-7"}}}, seen); n != 2 {
		t.Errorf("none in the dump, the seen of the held family: %d, want 2", n)
	}
}
