package shop;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/**
 * The shop's HTTP service on an embedded Tomcat 10.1, with the same routes as ShopServer (Netty), each a servlet.
 * Tomcat's defaults: a pool of up to 200 request threads.
 */
public final class TomcatShop {
    static final String USAGE = "Usage: tomcatshop [--addr HOST:PORT] [--ledger HOST:PORT]";

    public static void main(String[] args) throws Exception {
        Args a = new Args("tomcatshop", USAGE, Map.of("addr", "127.0.0.1:8080", "ledger", "127.0.0.1:7070"), args);
        String[] addr = a.address("addr"), ledgerAddr = a.address("ledger");
        LedgerClient ledger = new LedgerClient(ledgerAddr[0], Integer.parseInt(ledgerAddr[1]));
        Orders orders = new Orders();

        Path base = Files.createTempDirectory("tomcatshop");
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector();
        connector.setPort(Integer.parseInt(addr[1]));
        connector.setProperty("address", addr[0]);
        tomcat.setConnector(connector);
        Context ctx = tomcat.addContext("", base.toString());
        Tomcat.addServlet(ctx, "health", new HealthServlet());
        ctx.addServletMapping("/health", "health");
        Tomcat.addServlet(ctx, "accounts", new AccountsServlet(ledger));
        ctx.addServletMapping("/accounts/*", "accounts");
        Tomcat.addServlet(ctx, "orders", new OrdersServlet(orders));
        ctx.addServletMapping("/orders", "orders");
        ctx.addServletMapping("/orders/*", "orders");
        tomcat.start();
        if (connector.getLocalPort() <= 0) {
            System.err.println("tomcatshop: listen on " + addr[0] + ":" + addr[1] + ": the connector did not start");
            tomcat.stop();
            removeAll(base);
            System.exit(1);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                tomcat.stop();
                tomcat.destroy();
            } catch (Exception e) {
                // stopping anyway
            }
            removeAll(base);
        }));
        System.out.println("tomcatshop: listening on " + addr[0] + ":" + connector.getLocalPort() + ", the ledger at "
                + ledgerAddr[0] + ":" + ledgerAddr[1]);
        tomcat.getServer().await();
    }

    private static void removeAll(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }

    static void json(HttpServletResponse resp, int status, String json) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.setCharacterEncoding("UTF-8");
        resp.getWriter().write(json);
    }

    static String error(String why) {
        return "{\"error\":\"" + why.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}";
    }

    /** GET /health */
    static final class HealthServlet extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            json(resp, 200, "{\"status\":\"ok\"}");
        }
    }

    /** GET /accounts/{id}/balance, asked of the ledger. */
    static final class AccountsServlet extends HttpServlet {
        private static final Pattern BALANCE = Pattern.compile("/(\\d{1,18})/balance");
        private final LedgerClient ledger;

        AccountsServlet(LedgerClient ledger) {
            this.ledger = ledger;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            Matcher m = BALANCE.matcher(req.getPathInfo() == null ? "" : req.getPathInfo());
            if (!m.matches()) {
                json(resp, 404, error("not found"));
                return;
            }
            long account = Long.parseLong(m.group(1));
            long balance;
            try {
                balance = ledger.balance(account);
            } catch (IOException e) {
                json(resp, 502, error("the ledger: " + e.getMessage()));
                return;
            }
            json(resp, 200, "{\"account\":" + account + ",\"balance\":" + balance + "}");
        }
    }

    /** POST /orders, GET /orders (the latest 100, streamed), GET /orders/{id}. */
    static final class OrdersServlet extends HttpServlet {
        private final Orders orders;

        OrdersServlet(Orders orders) {
            this.orders = orders;
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            if (req.getPathInfo() != null) {
                json(resp, 405, error("method not allowed"));
                return;
            }
            String body = new String(req.getInputStream().readNBytes(1 << 20), StandardCharsets.UTF_8);
            Orders.Order o;
            try {
                o = orders.add(body);
            } catch (IllegalArgumentException e) {
                json(resp, 400, error(e.getMessage()));
                return;
            }
            resp.setHeader("Location", "/orders/" + o.id());
            json(resp, 201, o.json());
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            String path = req.getPathInfo();
            if (path != null && !path.equals("/")) {
                Orders.Order o = null;
                if (path.matches("/\\d{1,18}")) o = orders.find(Long.parseLong(path.substring(1)));
                if (o == null) json(resp, 404, error("no such order"));
                else json(resp, 200, o.json());
                return;
            }
            List<Orders.Order> latest = orders.latest(100);
            resp.setContentType("application/json");
            resp.setCharacterEncoding("UTF-8");
            PrintWriter w = resp.getWriter();
            w.write("[");
            resp.flushBuffer(); // the first piece goes at once
            for (int i = 0; i < latest.size(); i++) w.write((i > 0 ? "," : "") + latest.get(i).json());
            w.write("]");
        }
    }
}
