package shop;

import static io.netty.handler.codec.http.HttpHeaderNames.CONNECTION;
import static io.netty.handler.codec.http.HttpHeaderNames.CONTENT_LENGTH;
import static io.netty.handler.codec.http.HttpHeaderNames.CONTENT_TYPE;
import static io.netty.handler.codec.http.HttpHeaderNames.LOCATION;
import static io.netty.handler.codec.http.HttpHeaderValues.CLOSE;
import static io.netty.handler.codec.http.HttpHeaderValues.KEEP_ALIVE;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The shop's routes. */
final class ShopHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Pattern BALANCE = Pattern.compile("/accounts/(\\d{1,18})/balance");
    private static final Pattern ORDER = Pattern.compile("/orders/(\\d{1,18})");

    private final LedgerClient ledger;
    private final Orders orders;

    ShopHandler(LedgerClient ledger, Orders orders) {
        this.ledger = ledger;
        this.orders = orders;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        if (!req.decoderResult().isSuccess()) {
            send(ctx, req, HttpResponseStatus.BAD_REQUEST, error("bad request"), false);
            return;
        }
        String path = new QueryStringDecoder(req.uri()).path();
        HttpMethod method = req.method();
        Matcher m;
        if (path.equals("/health")) {
            if (method.equals(HttpMethod.GET)) send(ctx, req, HttpResponseStatus.OK, "{\"status\":\"ok\"}");
            else notAllowed(ctx, req);
        } else if ((m = BALANCE.matcher(path)).matches()) {
            if (method.equals(HttpMethod.GET)) balance(ctx, req, Long.parseLong(m.group(1)));
            else notAllowed(ctx, req);
        } else if (path.equals("/orders")) {
            if (method.equals(HttpMethod.POST)) order(ctx, req);
            else if (method.equals(HttpMethod.GET)) latestOrders(ctx, req);
            else notAllowed(ctx, req);
        } else if ((m = ORDER.matcher(path)).matches() && method.equals(HttpMethod.GET)) {
            Orders.Order o = orders.find(Long.parseLong(m.group(1)));
            if (o == null) send(ctx, req, HttpResponseStatus.NOT_FOUND, error("no such order"));
            else send(ctx, req, HttpResponseStatus.OK, o.json());
        } else {
            send(ctx, req, HttpResponseStatus.NOT_FOUND, error("not found"));
        }
    }

    private void balance(ChannelHandlerContext ctx, FullHttpRequest req, long account) {
        long balance;
        try {
            balance = ledger.balance(account);
        } catch (IOException e) {
            send(ctx, req, HttpResponseStatus.BAD_GATEWAY, error("the ledger: " + e.getMessage()));
            return;
        }
        send(ctx, req, HttpResponseStatus.OK, "{\"account\":" + account + ",\"balance\":" + balance + "}");
    }

    private void order(ChannelHandlerContext ctx, FullHttpRequest req) {
        Orders.Order o;
        try {
            o = orders.add(req.content().toString(StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            send(ctx, req, HttpResponseStatus.BAD_REQUEST, error(e.getMessage()));
            return;
        }
        FullHttpResponse resp = response(req, HttpResponseStatus.CREATED, o.json());
        resp.headers().set(LOCATION, "/orders/" + o.id());
        write(ctx, req, resp, HttpUtil.isKeepAlive(req));
    }

    /** The latest orders, streamed a piece at a time (chunked; HTTP/1.0 gets them whole). */
    private void latestOrders(ChannelHandlerContext ctx, FullHttpRequest req) {
        List<Orders.Order> latest = orders.latest(100);
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        if (req.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            StringBuilder all = new StringBuilder("[");
            for (int i = 0; i < latest.size(); i++) all.append(i > 0 ? "," : "").append(latest.get(i).json());
            send(ctx, req, HttpResponseStatus.OK, all.append("]").toString());
            return;
        }
        HttpResponse resp = new DefaultHttpResponse(req.protocolVersion(), HttpResponseStatus.OK);
        resp.headers().set(CONTENT_TYPE, "application/json");
        HttpUtil.setTransferEncodingChunked(resp, true);
        if (!keepAlive) resp.headers().set(CONNECTION, CLOSE);
        ctx.write(resp);
        ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer("[", StandardCharsets.UTF_8)));
        for (int i = 0; i < latest.size(); i++) {
            String piece = (i > 0 ? "," : "") + latest.get(i).json();
            ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer(piece, StandardCharsets.UTF_8)));
        }
        ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer("]", StandardCharsets.UTF_8)));
        ChannelFuture f = ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        if (!keepAlive) f.addListener(ChannelFutureListener.CLOSE);
    }

    private static void notAllowed(ChannelHandlerContext ctx, FullHttpRequest req) {
        send(ctx, req, HttpResponseStatus.METHOD_NOT_ALLOWED, error("method not allowed"));
    }

    private static String error(String why) {
        return "{\"error\":\"" + why.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}";
    }

    private static void send(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus status, String json) {
        send(ctx, req, status, json, HttpUtil.isKeepAlive(req));
    }

    private static void send(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus status, String json,
            boolean keepAlive) {
        write(ctx, req, response(req, status, json), keepAlive);
    }

    private static FullHttpResponse response(FullHttpRequest req, HttpResponseStatus status, String json) {
        FullHttpResponse resp = new DefaultFullHttpResponse(req.protocolVersion(), status,
                Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
        resp.headers().set(CONTENT_TYPE, "application/json").setInt(CONTENT_LENGTH, resp.content().readableBytes());
        return resp;
    }

    private static void write(ChannelHandlerContext ctx, FullHttpRequest req, FullHttpResponse resp, boolean keepAlive) {
        if (keepAlive) {
            if (!req.protocolVersion().isKeepAliveDefault()) resp.headers().set(CONNECTION, KEEP_ALIVE);
        } else {
            resp.headers().set(CONNECTION, CLOSE);
        }
        ChannelFuture f = ctx.writeAndFlush(resp);
        if (!keepAlive) f.addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
