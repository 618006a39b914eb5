package shop;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The shop's HTTP service on Netty 4.1: account balances (from the ledger service), orders, and a health check.
 *
 * <pre>
 *   GET  /health                 {"status":"ok"}
 *   GET  /accounts/{id}/balance  {"account":42,"balance":1000}, asked of the ledger
 *   POST /orders                 {"item":"book","quantity":2} -> 201 {"id":1,"item":"book","quantity":2}
 *   GET  /orders                 the latest 100 orders, streamed
 *   GET  /orders/{id}            one order
 * </pre>
 */
public final class ShopServer {
    static final String USAGE = "Usage: shopserver [--addr HOST:PORT] [--ledger HOST:PORT] [--workers N]";

    public static void main(String[] args) throws Exception {
        Args a = new Args("shopserver", USAGE,
                Map.of("addr", "127.0.0.1:8080", "ledger", "127.0.0.1:7070", "workers", "4"), args);
        String[] addr = a.address("addr"), ledgerAddr = a.address("ledger");
        int workers = a.count("workers", 1, 256);

        LedgerClient ledger = new LedgerClient(ledgerAddr[0], Integer.parseInt(ledgerAddr[1]));
        Orders orders = new Orders();
        EventLoopGroup bossGroup = new NioEventLoopGroup(1);
        EventLoopGroup workerGroup = new NioEventLoopGroup(workers);
        Channel channel;
        try {
            ServerBootstrap b = new ServerBootstrap()
                    .group(bossGroup, workerGroup)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec());
                            ch.pipeline().addLast(new HttpObjectAggregator(1 << 20));
                            ch.pipeline().addLast(new ShopHandler(ledger, orders));
                        }
                    });
            channel = b.bind(addr[0], Integer.parseInt(addr[1])).sync().channel();
        } catch (Exception e) {
            System.err.println("shopserver: listen on " + addr[0] + ":" + addr[1] + ": " + e);
            bossGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            workerGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            System.exit(1);
            return;
        }
        Channel listening = channel;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            listening.close().syncUninterruptibly();
            bossGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            workerGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }));
        System.out.println("shopserver: listening on " + channel.localAddress() + " with "
                + workers + " event loops, the ledger at " + ledgerAddr[0] + ":" + ledgerAddr[1]);
        channel.closeFuture().sync();
    }
}
