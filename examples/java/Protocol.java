// What the two Java servers share of bystander's endpoint protocol
// (docs/protocol.md): flags, Go durations, the clock and the blocking call.
package bystander;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

final class Protocol {
    private Protocol() {}

    static final long MAX_NS = 10_000_000_000L; // ?block= and ?delay= above this answer 400

    static final String FAST = "fast\n", SLOW = "slow\n", ASYNC = "async\n", OFFLOAD = "offload\n";

    /** Wall-clock Unix nanoseconds (Instant has microseconds on Linux): the protocol's timestamps. */
    static long nowNs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /**
     * The blocking call: Thread.sleep for the whole milliseconds (the published experiment's call; it holds the
     * thread) and LockSupport.parkNanos for the rest, so a 1.5 ms block is not rounded to 2. Returns how long it
     * really took, in ns (X-Blocked-Ns).
     */
    static long block(long ns) {
        if (db != null) return dbBlock(ns);
        long t0 = System.nanoTime(), end = t0 + ns;
        try {
            if (ns >= 1_000_000L) Thread.sleep(ns / 1_000_000L);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (long left = end - System.nanoTime(); left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
        return System.nanoTime() - t0;
    }

    /** With --db-url: the database pool (HikariCP) whose connections the blocking call asks SELECT pg_sleep on. */
    private static javax.sql.DataSource db;

    /** block's answer when the database call failed: the server answers 503 with DB_FAILED_BODY. */
    static final long DB_FAILED = -1;

    static final String DB_FAILED_BODY = "database: the call failed (the server's stderr says why)\n";

    private static final java.util.concurrent.atomic.AtomicInteger dbErrorsSaid = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Opens a HikariCP pool of n connections to the PostgreSQL at url (a JDBC URL) and takes every connection once, so
     * that the first requests do not pay for connecting. HikariCP and the PostgreSQL driver are found at run time
     * (Debian's libhikaricp-java and libpostgresql-jdbc-java on the classpath): without them the server says so.
     * The password is the environment's (PGPASSWORD, as libpq and pgx read it: only the server's own user and root
     * can read a process's environment); one in the URL is refused, since every local user can read argv (ps).
     */
    static void openDB(String prog, String url, int n) {
        if (java.util.regex.Pattern.compile("[?&;]password=", java.util.regex.Pattern.CASE_INSENSITIVE).matcher(url).find()) {
            System.err.println(prog + ": --db-url carries a password, which every local user can read (ps): "
                    + "give the URL without it and the password in PGPASSWORD");
            System.exit(2);
        }
        try {
            Class<?> cfgClass = Class.forName("com.zaxxer.hikari.HikariConfig");
            Object cfg = cfgClass.getConstructor().newInstance();
            cfgClass.getMethod("setJdbcUrl", String.class).invoke(cfg, url);
            String password = System.getenv("PGPASSWORD");
            if (password != null && !password.isEmpty()) cfgClass.getMethod("setPassword", String.class).invoke(cfg, password);
            cfgClass.getMethod("setMaximumPoolSize", int.class).invoke(cfg, n);
            cfgClass.getMethod("setMinimumIdle", int.class).invoke(cfg, n);
            cfgClass.getMethod("setConnectionTimeout", long.class).invoke(cfg, 30_000L);
            cfgClass.getMethod("setPoolName", String.class).invoke(cfg, "bystander-db");
            db = (javax.sql.DataSource) Class.forName("com.zaxxer.hikari.HikariDataSource").getConstructor(cfgClass).newInstance(cfg);
            java.util.List<java.sql.Connection> held = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    java.sql.Connection c = db.getConnection();
                    held.add(c);
                    try (java.sql.Statement st = c.createStatement()) {
                        st.execute("SELECT 1");
                    }
                }
            } finally {
                for (java.sql.Connection c : held) c.close();
            }
        } catch (ClassNotFoundException e) {
            System.err.println(prog + ": --db-url needs HikariCP and the PostgreSQL JDBC driver on the classpath: "
                    + "apt-get install libhikaricp-java libpostgresql-jdbc-java, then build again (" + e.getMessage() + ")");
            System.exit(2);
        } catch (Exception e) {
            Throwable t = e instanceof java.lang.reflect.InvocationTargetException && e.getCause() != null ? e.getCause() : e;
            System.err.println(prog + ": --db-url: " + t);
            System.exit(1);
        }
    }

    /** The database's blocking call: SELECT pg_sleep on a pool connection; the connection's hold in ns. */
    private static long dbBlock(long ns) {
        try (java.sql.Connection c = db.getConnection()) {
            long t0 = System.nanoTime();
            try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_sleep(?)")) {
                ps.setDouble(1, ns / 1e9);
                ps.execute();
            }
            return System.nanoTime() - t0;
        } catch (java.sql.SQLException e) {
            if (dbErrorsSaid.getAndIncrement() < 10) System.err.println("database: " + e);
            return DB_FAILED;
        }
    }

    private static final Map<String, Long> UNITS = new LinkedHashMap<>();

    static {
        UNITS.put("ns", 1L);
        UNITS.put("us", 1_000L);
        UNITS.put("\u00b5s", 1_000L);
        UNITS.put("ms", 1_000_000L);
        UNITS.put("s", 1_000_000_000L);
        UNITS.put("m", 60_000_000_000L);
        UNITS.put("h", 3_600_000_000_000L);
    }

    /** A Go duration ("5ms", "1.5s", "1h30m", "0") in ns, or -1 when it is not one or is negative. */
    static long parseDuration(String s) {
        if (s == null || s.isEmpty()) return -1;
        if (s.equals("0")) return 0;
        double total = 0;
        int i = 0;
        while (i < s.length()) {
            int j = i;
            while (j < s.length() && (Character.isDigit(s.charAt(j)) || s.charAt(j) == '.')) j++;
            if (j == i) return -1;
            double v;
            try {
                v = Double.parseDouble(s.substring(i, j));
            } catch (NumberFormatException e) {
                return -1;
            }
            int k = j;
            while (k < s.length() && !Character.isDigit(s.charAt(k)) && s.charAt(k) != '.') k++;
            Long unit = UNITS.get(s.substring(j, k));
            if (unit == null) return -1;
            total += v * unit;
            i = k;
        }
        return total > Long.MAX_VALUE ? -1 : (long) total;
    }

    /** The query parameter name of a raw query string, percent-decoded; null when absent. */
    static String param(String query, String name) {
        if (query == null) return null;
        for (String kv : query.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(name)) {
                try {
                    return java.net.URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    return kv.substring(eq + 1);
                }
            }
        }
        return null;
    }

    /** Thrown for a ?block= or ?delay= the protocol answers 400 for; the message is the body. */
    static final class BadQuery extends Exception {
        BadQuery(String msg) {
            super(msg);
        }
    }

    /** The duration of ?name=, or dflt when absent. */
    static long duration(String query, String name, long dflt) throws BadQuery {
        String v = param(query, name);
        if (v == null) return dflt;
        long d = parseDuration(v);
        if (d < 0) throw new BadQuery("bad " + name + "=\"" + v + "\": want a Go duration such as 5ms\n");
        if (d > MAX_NS) throw new BadQuery("bad " + name + "=" + v + ": above the server's maximum 10s\n");
        return d;
    }

    /** The command line: --name value or --name=value. */
    static final class Flags {
        final Map<String, String> values = new LinkedHashMap<>();
        private final String prog, usage;

        Flags(String prog, String usage, Map<String, String> defaults) {
            this.prog = prog;
            this.usage = usage;
            values.putAll(defaults);
        }

        void parse(String[] args) {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--help") || a.equals("-h")) {
                    System.out.println(usage);
                    System.exit(0);
                }
                String name = a.replaceFirst("^--?", ""), value = null;
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                if (!a.startsWith("-") || !values.containsKey(name)) bad("unknown flag " + a);
                if (value == null) {
                    if (i + 1 >= args.length) bad("--" + name + " needs a value");
                    value = args[++i];
                }
                values.put(name, value);
            }
        }

        void bad(String why) {
            System.err.println(prog + ": " + why + " (see --help)");
            System.exit(2);
        }

        String string(String name) {
            return values.get(name);
        }

        long durationNs(String name) {
            long d = parseDuration(values.get(name));
            if (d < 0 || d > MAX_NS) bad("--" + name + " " + values.get(name) + ": want a Go duration from 0 to 10s");
            return d;
        }

        int count(String name, int lo, int hi) {
            try {
                int n = Integer.parseInt(values.get(name));
                if (n >= lo && n <= hi) return n;
            } catch (NumberFormatException e) {
                // said below
            }
            bad("--" + name + " " + values.get(name) + ": want a whole number from " + lo + " to " + hi);
            return 0;
        }

        /** --addr as host and port; port 0 picks a free one. */
        String[] addr() {
            String a = values.get("addr");
            int colon = a.lastIndexOf(':');
            if (colon < 0) bad("--addr " + a + ": want HOST:PORT");
            String host = a.substring(0, colon).replaceAll("^\\[|\\]$", "");
            try {
                int port = Integer.parseInt(a.substring(colon + 1));
                if (port < 0 || port > 65535) throw new NumberFormatException();
                return new String[] {host, Integer.toString(port)};
            } catch (NumberFormatException e) {
                bad("--addr " + a + ": want HOST:PORT");
                return null;
            }
        }
    }

    /**
     * Says where the server listens: a line on stdout, and with --ready-file the kit's ready file (JSON, written
     * through a rename so a reader never sees half of it).
     */
    static void ready(String readyFile, String host, int port, String kind, int workers, String line) throws IOException {
        String shown = host.contains(":") ? "[" + host + "]:" + port : host + ":" + port;
        System.out.println(line.replace("ADDR", shown));
        System.out.flush();
        if (readyFile == null || readyFile.isEmpty()) return;
        long pid = ProcessHandle.current().pid();
        String json = "{\"schema\":\"bystander.ready/v1\",\"addr\":\"" + shown + "\",\"admin\":\"\",\"pid\":" + pid
                + ",\"kind\":\"" + kind + "\",\"workers\":" + workers + "}\n";
        Path dst = Path.of(readyFile), tmp = dst.resolveSibling("." + dst.getFileName() + ".tmp");
        Files.writeString(tmp, json, StandardCharsets.UTF_8);
        Files.move(tmp, dst, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
