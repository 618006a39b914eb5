// The watch package's test service: LOOPS threads named as Netty names its
// event loops, each calling LedgerClient.balance back to back (a blocking
// read from the backend at PORT), beside a pool of three threads named as
// Tomcat names its request threads that wait for work in their queue (a
// no-op task every 20 ms wakes one). It prints "ready" once all run, and
// ends when its stdin closes or after SECONDS.
//
//   java -cp CLASSES LedgerService PORT LOOPS SECONDS
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class LedgerService {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int loops = Integer.parseInt(args[1]);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[2]));
        for (int i = 1; i <= loops; i++) {
            LedgerClient c = new LedgerClient(port);
            Thread t = new Thread(() -> serve(c, until), "nioEventLoopGroup-2-" + i);
            t.setDaemon(true);
            t.start();
        }
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(3, 3, 1, TimeUnit.HOURS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "http-nio-8080-exec-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        pool.prestartAllCoreThreads();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
                // closed
            }
            System.exit(0);
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        System.out.println("ready");
        System.out.flush();
        while (System.nanoTime() < until) {
            pool.execute(() -> { });
            Thread.sleep(20);
        }
        System.exit(0);
    }

    private static void serve(LedgerClient c, long until) {
        for (long a = 0; System.nanoTime() < until; a++) {
            try {
                c.balance(a);
            } catch (Exception e) {
                return;
            }
        }
    }
}
