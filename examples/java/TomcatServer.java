// An embedded Tomcat 10.1 server that speaks bystander's endpoint protocol (docs/protocol.md): the published
// Netty-vs-Tomcat experiment's thread-pool server. The NIO connector hands every request to a pool of
// --threads threads (default 200, all started up front); /slow blocks the thread serving it with Thread.sleep;
// /async and /offload go through the Servlet API's AsyncContext: the delay is a timer, the blocking call runs on a
// separate bounded pool, and the answer is written by a container thread after dispatch().
//
//   java -cp CLASSES:JARS bystander.TomcatServer --addr 127.0.0.1:0 [--threads 200] [--block 5ms] [--delay 5ms]
//        [--offload-workers 200] [--ready-file F]
//
// Built from Debian's packages only (openjdk-17-jdk-headless, libtomcat10-java) by examples/java/build.sh.
package bystander;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

public final class TomcatServer {
    private static final String USAGE = String.join("\n",
            "Usage: java bystander.TomcatServer [--addr HOST:PORT] [--threads N] [--block D] [--delay D] [--offload-workers N] [--ready-file F]",
            "",
            "  --addr             where to listen (default 127.0.0.1:8092; port 0 picks a free one)",
            "  --threads          the connector's request threads, maxThreads (default 200)",
            "  --block            the blocking call of /slow and /offload unless ?block= says (default 5ms)",
            "  --delay            the /async delay unless ?delay= says (default 5ms)",
            "  --offload-workers  threads of the pool /offload blocks on (default 200)",
            "  --ready-file       write {addr, pid, ...} as JSON here once it listens (for the kit)",
            "  --db-url           a JDBC URL: the blocking call is SELECT pg_sleep on a HikariCP connection (default: Thread.sleep);",
            "                     no password in it (ps shows it to everyone): the password is PGPASSWORD's",
            "  --db-pool          the HikariCP pool's connections, all opened at start (default 10)",
            "Durations are Go durations: 5ms, 250us, 1.5s.");

    private static long defaultBlock, defaultDelay;
    private static ThreadPoolExecutor offloadPool;
    private static final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "async-timer");
        t.setDaemon(true);
        return t;
    });

    public static void main(String[] args) throws Exception {
        Protocol.Flags f = new Protocol.Flags("TomcatServer", USAGE, Map.of(
                "addr", "127.0.0.1:8092", "threads", "200", "block", "5ms", "delay", "5ms", "offload-workers", "200", "ready-file", "",
                "db-url", "", "db-pool", "10"));
        f.parse(args);
        String[] addr = f.addr();
        int threads = f.count("threads", 1, 10_000);
        int workers = f.count("offload-workers", 1, 10_000);
        defaultBlock = f.durationNs("block");
        defaultDelay = f.durationNs("delay");
        offloadPool = new ThreadPoolExecutor(workers, workers, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(10_000));
        if (!f.string("db-url").isEmpty()) Protocol.openDB("TomcatServer", f.string("db-url"), f.count("db-pool", 1, 1000));
        Logger.getLogger("org.apache").setLevel(Level.WARNING);

        File base = Files.createTempDirectory("bystander-tomcat").toFile();
        base.deleteOnExit();
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.getAbsolutePath());
        Connector c = new Connector("org.apache.coyote.http11.Http11NioProtocol");
        c.setPort(Integer.parseInt(addr[1]));
        c.setProperty("address", addr[0]);
        c.setProperty("maxThreads", Integer.toString(threads));
        c.setProperty("minSpareThreads", Integer.toString(threads)); // every thread up front: no growth mid-measurement
        c.setProperty("maxKeepAliveRequests", "-1"); // keep-alive unlimited
        c.setProperty("keepAliveTimeout", "-1");
        c.setProperty("connectionTimeout", "60000");
        c.setProperty("maxConnections", "10000"); // room for 300 callers and the probers
        c.setProperty("acceptCount", "1024");
        c.setProperty("tcpNoDelay", "true");
        tomcat.getService().addConnector(c);
        tomcat.setConnector(c);
        Context ctx = tomcat.addContext("", base.getAbsolutePath());
        Tomcat.addServlet(ctx, "protocol", new ProtocolServlet()).setAsyncSupported(true);
        ctx.addServletMappingDecoded("/*", "protocol", false);
        try {
            tomcat.start();
        } catch (Exception e) {
            System.err.println("TomcatServer: start: " + e.getMessage());
            System.exit(1);
        }
        if (c.getLocalPort() <= 0) {
            System.err.println("TomcatServer: listen " + addr[0] + ":" + addr[1] + ": the connector did not start (port taken?)");
            System.exit(1);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                tomcat.stop();
            } catch (Exception e) {
                // ending anyway
            }
            offloadPool.shutdownNow();
        }));
        Protocol.ready(f.string("ready-file"), addr[0], c.getLocalPort(), "pool", threads,
                "TomcatServer: listening on http://ADDR (tomcat " + threads + " threads, pid " + ProcessHandle.current().pid()
                        + ", block " + defaultBlock / 1e6 + "ms, " + workers + " offload workers)");
        tomcat.getServer().await();
    }

    /** The four routes; the answers of /async and /offload are written after dispatch(), on a container thread. */
    static final class ProtocolServlet extends HttpServlet {
        private static final String START = "bystander.start", BODY = "bystander.body", BLOCKED = "bystander.blocked",
                CONT = "bystander.continuation";

        @Override
        protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            if (req.getDispatcherType() == DispatcherType.ASYNC) {
                // The continuation: the timer or the offload pool dispatched back to the container.
                long cs = Protocol.nowNs();
                resp.setHeader("X-Continuation-Start", Long.toString(cs));
                Object blocked = req.getAttribute(BLOCKED);
                if (blocked != null && (Long) blocked == Protocol.DB_FAILED) {
                    write(req, resp, 503, Protocol.DB_FAILED_BODY, (Long) req.getAttribute(START));
                    return;
                }
                if (blocked != null) resp.setHeader("X-Blocked-Ns", blocked.toString());
                write(req, resp, 200, (String) req.getAttribute(BODY), (Long) req.getAttribute(START));
                return;
            }
            long start = Protocol.nowNs();
            if (req.getHeader("Transfer-Encoding") != null) {
                resp.setHeader("Connection", "close");
                write(req, resp, 501, "Transfer-Encoding is not supported\n", start);
                return;
            }
            if (req.getContentLengthLong() > 4096) {
                resp.setHeader("Connection", "close");
                write(req, resp, 413, "request body over 4 KiB\n", start);
                return;
            }
            String m = req.getMethod();
            if (!m.equals("GET") && !m.equals("HEAD")) {
                write(req, resp, 405, "method not allowed: use GET or HEAD\n", start);
                return;
            }
            String query = req.getQueryString();
            try {
                switch (req.getRequestURI()) {
                    case "/fast":
                        write(req, resp, 200, Protocol.FAST, start);
                        return;
                    case "/slow": {
                        long blocked = Protocol.block(Protocol.duration(query, "block", defaultBlock)); // holds this thread
                        if (blocked == Protocol.DB_FAILED) {
                            write(req, resp, 503, Protocol.DB_FAILED_BODY, start);
                            return;
                        }
                        resp.setHeader("X-Blocked-Ns", Long.toString(blocked));
                        write(req, resp, 200, Protocol.SLOW, start);
                        return;
                    }
                    case "/async": {
                        long delay = Protocol.duration(query, "delay", defaultDelay);
                        AsyncContext ac = begin(req, start, Protocol.ASYNC);
                        timer.schedule((Runnable) ac::dispatch, delay, TimeUnit.NANOSECONDS); // the thread is free meanwhile
                        return;
                    }
                    case "/offload": {
                        long block = Protocol.duration(query, "block", defaultBlock);
                        AsyncContext ac = begin(req, start, Protocol.OFFLOAD);
                        try {
                            offloadPool.execute(() -> {
                                req.setAttribute(BLOCKED, Protocol.block(block));
                                ac.dispatch();
                            });
                        } catch (RejectedExecutionException e) {
                            write(req, resp, 503, "offload queue full\n", start);
                            ac.complete();
                        }
                        return;
                    }
                    default:
                        write(req, resp, 404, "not found: this server serves /fast /slow /async /offload\n", start);
                }
            } catch (Protocol.BadQuery e) {
                write(req, resp, 400, e.getMessage(), start);
            }
        }

        private static AsyncContext begin(HttpServletRequest req, long start, String body) {
            req.setAttribute(START, start);
            req.setAttribute(BODY, body);
            req.setAttribute(CONT, Boolean.TRUE);
            AsyncContext ac = req.startAsync();
            ac.setTimeout(0); // the delay or block bounds it, not a container timeout
            return ac;
        }

        private static void write(HttpServletRequest req, HttpServletResponse resp, int status, String body, long start) throws IOException {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            resp.setStatus(status);
            resp.setHeader("X-Handler-Start", Long.toString(start));
            resp.setContentType("text/plain");
            resp.setContentLength(b.length);
            if (!req.getMethod().equals("HEAD")) resp.getOutputStream().write(b);
        }
    }
}
