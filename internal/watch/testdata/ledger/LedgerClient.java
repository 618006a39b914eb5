// A repository's client for a ledger backend, written without the kit in
// mind: one blocking round trip a call, a line out and a line back.
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

final class LedgerClient {
    private final BufferedReader in;
    private final OutputStream out;

    LedgerClient(int port) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setTcpNoDelay(true);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        out = socket.getOutputStream();
    }

    long balance(long account) throws IOException {
        out.write((account + "\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String line = in.readLine(); // the blocking read
        if (line == null) {
            throw new IOException("ledger closed");
        }
        return Long.parseLong(line.trim());
    }
}
