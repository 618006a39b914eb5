package watch

import (
	"regexp"
	"strings"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// What a Java frame or thread name says: the runtime's or a server
// library's frame, a wait for work, a thread's role, a frame's file.

// The Java frames that are the runtime's, and the servers' libraries'.
var (
	javaRuntime = []string{"java.", "javax.", "jdk.", "sun.", "com.sun.", "jakarta."}
	javaServers = []string{"io.netty.", "org.apache.tomcat.", "org.apache.catalina.", "org.apache.coyote.", "org.eclipse.jetty.",
		"io.undertow.", "org.xnio.", "org.jboss.threads.", "io.vertx.", "reactor.netty.", "io.helidon.", "org.glassfish.grizzly."}
	// javaIdle are where a serving thread waits for work: a pool's queue,
	// a loop's task queue.
	javaIdle = []string{"java.util.concurrent.ThreadPoolExecutor.getTask", "org.apache.tomcat.util.threads.ThreadPoolExecutor.getTask",
		"org.apache.tomcat.util.threads.TaskQueue.", "java.util.concurrent.ForkJoinPool.awaitWork",
		"io.netty.util.concurrent.SingleThreadEventExecutor.takeTask", "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
		"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
		"java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.", "org.jboss.threads.EnhancedQueueExecutor$ThreadBody.run"}
	// javaLoops and javaPools are frames, javaLoopNames and javaPoolNames
	// thread names, of the threads that serve connections: event loops
	// (Netty, Vert.x, XNIO's I/O threads) and pools (Tomcat's, Jetty's,
	// XNIO's task threads).
	javaLoops = []string{"io.netty.channel.nio.NioEventLoop.run", "io.netty.channel.epoll.EpollEventLoop.run",
		"io.netty.channel.kqueue.KQueueEventLoop.run", "io.netty.channel.SingleThreadIoEventLoop.run", "org.xnio.nio.WorkerThread.run"}
	javaPools = []string{"org.apache.tomcat.util.threads.ThreadPoolExecutor$Worker.run", "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run",
		"org.jboss.threads.EnhancedQueueExecutor$ThreadBody.run"}
	javaLoopNames = regexp.MustCompile(`^(nio|epoll|kqueue|ioUring|multiThreadIo)EventLoopGroup-\d+-\d+$|^vert\.x-eventloop-thread-\d+$|^XNIO-\d+ I/O-\d+$|^reactor-http-(nio|epoll)-\d+$`)
	javaPoolNames = regexp.MustCompile(`-exec-\d+$|^qtp\d+-\d+$|^XNIO-\d+ task-\d+$|^default task-\d+$`)
)

func javaIsRuntime(fn string) bool { return hasPrefix(fn, javaRuntime) }
func javaIsServer(fn string) bool  { return hasPrefix(fn, javaServers) }

// The roles.
const (
	roleLoop  = "event-loop threads"
	rolePool  = "request threads"
	roleOther = "threads"
)

// javaRole is a thread's role by its stack (a dump's, or an event's),
// else by its name.
func javaRole(name string, frames []culprit.Frame) string {
	for _, f := range frames {
		switch {
		case hasPrefix(f.Function, javaLoops):
			return roleLoop
		case hasPrefix(f.Function, javaPools):
			return rolePool
		}
	}
	switch {
	case javaLoopNames.MatchString(name):
		return roleLoop
	case javaPoolNames.MatchString(name):
		return rolePool
	}
	return roleOther
}

// javaIdleWait says the hold is a wait for work: a frame below the
// application's (or anywhere, without one) is a pool's or a loop's wait.
func javaIdleWait(frames []culprit.Frame) bool {
	for _, f := range frames {
		if !javaIsRuntime(f.Function) && !javaIsServer(f.Function) {
			return false // the application's call
		}
		if hasPrefix(f.Function, javaIdle) {
			return true
		}
	}
	return false
}

func hasRole(roles map[string]string, role string) bool {
	for _, r := range roles {
		if r == role {
			return true
		}
	}
	return false
}

// className is a Java frame's class: "LedgerClient" of
// "LedgerClient.balance".
func className(fn string) string {
	if i := strings.LastIndexByte(fn, '.'); i > 0 {
		return fn[:i]
	}
	return fn
}

// javaFile is the frame's file: a dump's, else inferred from its class
// ("com.acme.Ledger$Client" in "Ledger.java"), which it says.
func javaFile(fn string, files map[string]string) (string, bool) {
	class := className(fn)
	if f, ok := files[class]; ok {
		return f, false
	}
	outer, _, _ := strings.Cut(class[strings.LastIndexByte(class, '.')+1:], "$")
	if outer == "" {
		return "", true
	}
	return outer + ".java", true
}
