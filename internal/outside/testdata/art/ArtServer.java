// A Netty server written without the kit in mind, for the outside view's test: its own thread names (longer than
// the 15 characters /proc keeps), its own handler, and a legacy call that sleeps on the event loop. It speaks plain
// HTTP, not the kit's protocol: GET /stock blocks its loop 100 ms, anything else answers at once.
//
//   java -cp CLASSES:NETTY_JARS ArtServer PORT_FILE
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;

public final class ArtServer {
    public static void main(String[] args) throws Exception {
        NioEventLoopGroup acceptor = new NioEventLoopGroup(1, new DefaultThreadFactory("art-acceptor"));
        NioEventLoopGroup loops = new NioEventLoopGroup(2, new DefaultThreadFactory("art-netty-event-loop"));
        Channel ch = new ServerBootstrap().group(acceptor, loops).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel c) {
                        c.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1024), new Inventory());
                    }
                }).bind("127.0.0.1", 0).sync().channel();
        Files.writeString(Path.of(args[0]), String.valueOf(((InetSocketAddress) ch.localAddress()).getPort()));
        ch.closeFuture().sync();
    }

    static final class Inventory extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) throws Exception {
            if (req.uri().startsWith("/stock")) {
                lookupStock();
            }
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            HttpUtil.setContentLength(r, 0);
            ctx.writeAndFlush(r);
        }

        /** The legacy call: a synchronous lookup someone left in the handler. */
        private static void lookupStock() throws InterruptedException {
            Thread.sleep(100);
        }
    }
}
