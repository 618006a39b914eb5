package shop;

import java.io.BufferedReader;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * The ledger's client. The ledger speaks lines: "BALANCE 42" in, "42 1000" out. Each thread keeps its own
 * connection, a plain socket opened at its first call and kept while it works.
 */
public final class LedgerClient {
    private static final int TIMEOUT_MS = 5000;

    private final String host;
    private final int port;
    private final ThreadLocal<Connection> connection = new ThreadLocal<>();

    public LedgerClient(String host, int port) {
        this.host = host;
        this.port = port;
    }

    /** The account's balance, as the ledger has it. */
    public long balance(long account) throws IOException {
        Connection c = connect();
        try {
            c.out.write("BALANCE " + account + "\n");
            c.out.flush();
            String line = c.in.readLine();
            if (line == null) throw new EOFException("the ledger closed the connection");
            String[] fields = line.split(" ");
            if (fields.length != 2 || !fields[0].equals(Long.toString(account))) {
                throw new IOException("the ledger answered \"" + line + "\"");
            }
            return Long.parseLong(fields[1]);
        } catch (IOException | RuntimeException e) {
            c.close();
            connection.remove();
            if (e instanceof IOException) throw (IOException) e;
            throw new IOException("the ledger's answer: " + e.getMessage(), e);
        }
    }

    private Connection connect() throws IOException {
        Connection c = connection.get();
        if (c == null) {
            c = new Connection(host, port);
            connection.set(c);
        }
        return c;
    }

    private static final class Connection {
        final Socket socket = new Socket();
        final BufferedReader in;
        final Writer out;

        Connection(String host, int port) throws IOException {
            socket.connect(new InetSocketAddress(host, port), TIMEOUT_MS);
            socket.setSoTimeout(TIMEOUT_MS);
            socket.setTcpNoDelay(true);
            in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
            out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.US_ASCII);
        }

        void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // gone either way
            }
        }
    }
}
