// A Netty 4.1 server that speaks bystander's endpoint protocol (docs/protocol.md): the published
// Netty-vs-Tomcat experiment's event-loop server. A NioEventLoopGroup of --loops loops (default 4) serves every
// connection; /slow blocks the connection's loop with Thread.sleep; /async schedules its answer on the
// connection's own loop (ctx.executor().schedule); /offload runs the same call on a separate bounded pool and
// answers back on the loop.
//
//   java -cp CLASSES:JARS bystander.NettyServer --addr 127.0.0.1:0 [--loops 4] [--block 5ms] [--delay 5ms]
//        [--offload-workers 200] [--ready-file F]
//
// Built from Debian's packages only (openjdk-17-jdk-headless, libnetty-java) by examples/java/build.sh.
package bystander;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.EventExecutor;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

public final class NettyServer {
    private static final String USAGE = String.join("\n",
            "Usage: java bystander.NettyServer [--addr HOST:PORT] [--loops N] [--block D] [--delay D] [--offload-workers N] [--ready-file F]",
            "",
            "  --addr             where to listen (default 127.0.0.1:8091; port 0 picks a free one)",
            "  --loops            event loops of the NioEventLoopGroup (default 4)",
            "  --block            the blocking call of /slow and /offload unless ?block= says (default 5ms)",
            "  --delay            the /async delay unless ?delay= says (default 5ms)",
            "  --offload-workers  threads of the pool /offload blocks on (default 200)",
            "  --ready-file       write {addr, pid, ...} as JSON here once it listens (for the kit)",
            "  --db-url           a JDBC URL: the blocking call is SELECT pg_sleep on a HikariCP connection (default: Thread.sleep);",
            "                     no password in it (ps shows it to everyone): the password is PGPASSWORD's",
            "  --db-pool          the HikariCP pool's connections, all opened at start (default 10)",
            "Durations are Go durations: 5ms, 250us, 1.5s.");

    private static long defaultBlock, defaultDelay;
    private static final List<EventLoop> loops = new ArrayList<>();
    private static ThreadPoolExecutor offloadPool;

    public static void main(String[] args) throws Exception {
        Protocol.Flags f = new Protocol.Flags("NettyServer", USAGE, Map.of(
                "addr", "127.0.0.1:8091", "loops", "4", "block", "5ms", "delay", "5ms", "offload-workers", "200", "ready-file", "",
                "db-url", "", "db-pool", "10"));
        f.parse(args);
        String[] addr = f.addr();
        int n = f.count("loops", 1, 256);
        int workers = f.count("offload-workers", 1, 10_000);
        defaultBlock = f.durationNs("block");
        defaultDelay = f.durationNs("delay");
        offloadPool = new ThreadPoolExecutor(workers, workers, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(10_000));
        if (!f.string("db-url").isEmpty()) Protocol.openDB("NettyServer", f.string("db-url"), f.count("db-pool", 1, 1000));

        NioEventLoopGroup boss = new NioEventLoopGroup(1), group = new NioEventLoopGroup(n);
        // The group hands channels to its loops in turn (Netty's chooser is round-robin), so any 4k consecutive
        // connections land k per loop. Loops are numbered in the group's own order.
        for (EventExecutor e : group) loops.add((EventLoop) e);
        ServerBootstrap b = new ServerBootstrap()
                .group(boss, group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(8192, 8192, 8192), new Aggregator(), new Handler());
                    }
                });
        Channel ch;
        try {
            ch = b.bind(addr[0], Integer.parseInt(addr[1])).sync().channel();
        } catch (Exception e) {
            System.err.println("NettyServer: listen " + addr[0] + ":" + addr[1] + ": " + e.getMessage());
            System.exit(1);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            ch.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            offloadPool.shutdownNow();
        }));
        InetSocketAddress local = (InetSocketAddress) ch.localAddress();
        Protocol.ready(f.string("ready-file"), local.getAddress().getHostAddress(), local.getPort(), "loop", n,
                "NettyServer: listening on http://ADDR (netty " + n + " event loops, pid " + ProcessHandle.current().pid()
                        + ", block " + defaultBlock / 1e6 + "ms, " + workers + " offload workers)");
        ch.closeFuture().sync();
    }

    /** The loop the calling thread runs, or -1 when it is not one of the group's loops. */
    static int currentLoop() {
        for (int i = 0; i < loops.size(); i++) {
            if (loops.get(i).inEventLoop()) return i;
        }
        return -1;
    }

    /** Aggregates a request with its body (at most 4 KiB); a larger body is 413 and a close. */
    static final class Aggregator extends HttpObjectAggregator {
        Aggregator() {
            super(4096);
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            FullHttpResponse r = text(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "request body over 4 KiB\n");
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }

    static FullHttpResponse text(HttpResponseStatus status, String body) {
        ByteBuf buf = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, buf);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, buf.readableBytes());
        return r;
    }

    /**
     * Serves one connection. Requests are answered in order: a request that arrives while an /async or /offload
     * answer is pending waits in the queue (HTTP/1.1 pipelining), so answers never overtake each other.
     */
    static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
        private boolean pending;

        Handler() {
            super(false); // the queue keeps requests past channelRead0
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (pending) {
                waiting.add(req);
                return;
            }
            serve(ctx, req);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            for (FullHttpRequest r : waiting) r.release();
            waiting.clear();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }

        private void next(ChannelHandlerContext ctx) {
            pending = false;
            while (!pending && !waiting.isEmpty() && ctx.channel().isActive()) serve(ctx, waiting.poll());
        }

        private void serve(ChannelHandlerContext ctx, FullHttpRequest req) {
            try {
                route(ctx, req);
            } finally {
                req.release();
            }
        }

        private void route(ChannelHandlerContext ctx, FullHttpRequest req) {
            long start = Protocol.nowNs();
            int loop = loops.indexOf(ctx.channel().eventLoop());
            if (req.decoderResult().isFailure()) {
                Throwable c = req.decoderResult().cause();
                boolean tooLong = c instanceof TooLongFrameException;
                closeWith(ctx, tooLong ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE : HttpResponseStatus.BAD_REQUEST,
                        tooLong ? "request line or headers too large\n" : "malformed request\n", start, loop);
                return;
            }
            HttpVersion v = req.protocolVersion();
            if (v.majorVersion() != 1 || v.minorVersion() > 1) {
                closeWith(ctx, HttpResponseStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP version not supported\n", start, loop);
                return;
            }
            if (v.minorVersion() == 1 && !req.headers().contains(HttpHeaderNames.HOST)) {
                closeWith(ctx, HttpResponseStatus.BAD_REQUEST, "missing Host\n", start, loop);
                return;
            }
            if (!req.uri().startsWith("/")) {
                closeWith(ctx, HttpResponseStatus.BAD_REQUEST, "the target is not a path\n", start, loop);
                return;
            }
            if (req.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)) {
                closeWith(ctx, HttpResponseStatus.NOT_IMPLEMENTED, "Transfer-Encoding is not supported\n", start, loop);
                return;
            }
            boolean head = req.method().equals(HttpMethod.HEAD);
            if (!head && !req.method().equals(HttpMethod.GET)) {
                answer(ctx, req, HttpResponseStatus.METHOD_NOT_ALLOWED, "method not allowed: use GET or HEAD\n", start, loop, null);
                return;
            }
            String uri = req.uri();
            int q = uri.indexOf('?');
            String path = q < 0 ? uri : uri.substring(0, q), query = q < 0 ? null : uri.substring(q + 1);
            try {
                switch (path) {
                    case "/fast":
                        answer(ctx, req, HttpResponseStatus.OK, Protocol.FAST, start, loop, null);
                        return;
                    case "/slow": {
                        long blocked = Protocol.block(Protocol.duration(query, "block", defaultBlock)); // holds this loop
                        if (blocked == Protocol.DB_FAILED) {
                            answer(ctx, req, HttpResponseStatus.SERVICE_UNAVAILABLE, Protocol.DB_FAILED_BODY, start, loop, null);
                            return;
                        }
                        answer(ctx, req, HttpResponseStatus.OK, Protocol.SLOW, start, loop, r -> r.headers().set("X-Blocked-Ns", blocked));
                        return;
                    }
                    case "/async": {
                        long delay = Protocol.duration(query, "delay", defaultDelay);
                        pending = true;
                        FullHttpRequest kept = req.retainedDuplicate();
                        // The continuation is scheduled on the connection's own loop: late when that loop is blocked.
                        ctx.executor().schedule(() -> {
                            try {
                                long cs = Protocol.nowNs();
                                answer(ctx, kept, HttpResponseStatus.OK, Protocol.ASYNC, start, loop, r -> {
                                    r.headers().set("X-Continuation-Start", cs);
                                    r.headers().set("X-Continuation-Loop", currentLoop());
                                });
                            } finally {
                                kept.release();
                            }
                            next(ctx);
                        }, delay, TimeUnit.NANOSECONDS);
                        return;
                    }
                    case "/offload": {
                        long block = Protocol.duration(query, "block", defaultBlock);
                        pending = true;
                        FullHttpRequest kept = req.retainedDuplicate();
                        try {
                            offloadPool.execute(() -> {
                                long blocked = Protocol.block(block);
                                // The answer goes back through the connection's loop, which owns it.
                                ctx.executor().execute(() -> {
                                    try {
                                        long cs = Protocol.nowNs();
                                        boolean failed = blocked == Protocol.DB_FAILED;
                                        answer(ctx, kept, failed ? HttpResponseStatus.SERVICE_UNAVAILABLE : HttpResponseStatus.OK,
                                                failed ? Protocol.DB_FAILED_BODY : Protocol.OFFLOAD, start, loop, r -> {
                                            if (!failed) r.headers().set("X-Blocked-Ns", blocked);
                                            r.headers().set("X-Continuation-Start", cs);
                                            r.headers().set("X-Continuation-Loop", currentLoop());
                                        });
                                    } finally {
                                        kept.release();
                                    }
                                    next(ctx);
                                });
                            });
                        } catch (RejectedExecutionException e) {
                            kept.release();
                            pending = false;
                            answer(ctx, req, HttpResponseStatus.SERVICE_UNAVAILABLE, "offload queue full\n", start, loop, null);
                        }
                        return;
                    }
                    default:
                        answer(ctx, req, HttpResponseStatus.NOT_FOUND, "not found: this server serves /fast /slow /async /offload\n", start, loop, null);
                }
            } catch (Protocol.BadQuery e) {
                answer(ctx, req, HttpResponseStatus.BAD_REQUEST, e.getMessage(), start, loop, null);
            }
        }

        interface Headers {
            void add(FullHttpResponse r);
        }

        private void answer(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus status, String body, long start, int loop, Headers extra) {
            FullHttpResponse r = text(status, body);
            r.headers().set("X-Handler-Start", start);
            r.headers().set("X-Loop", loop);
            if (extra != null) extra.add(r);
            if (req.method().equals(HttpMethod.HEAD)) r.content().clear(); // Content-Length stays: the GET's
            boolean keep = HttpUtil.isKeepAlive(req);
            if (!keep) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            if (req.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            }
            ctx.writeAndFlush(r);
        }

        private void closeWith(ChannelHandlerContext ctx, HttpResponseStatus status, String body, long start, int loop) {
            FullHttpResponse r = text(status, body);
            r.headers().set("X-Handler-Start", start);
            r.headers().set("X-Loop", loop);
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
