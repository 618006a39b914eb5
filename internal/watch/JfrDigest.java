// JfrDigest reads a Flight Recorder recording and prints, as a stream of
// small JSON objects, what the kit's watch package needs of it: each stack
// once, then each event of the types asked for by its stack's number, and
// the thread dumps. `jfr print --json` spends about 1.5 kB a frame on its
// class loaders and modules (40 kB an event of Tomcat's): a 2 s window of
// 8 callers on Tomcat passed 128 MiB; this prints about 150 bytes an event.
//
//   java JfrDigest.java RECORDING TYPE...
//
//   {"stack":N,"frames":[{"c":"java.net.Socket$SocketInputStream","m":"read","l":67},...]}
//   {"event":"jdk.SocketRead","start":UNIX_NS,"dur":NS,"thread":"nioEventLoopGroup-3-1","tid":OS_TID,"stack":N,"peer":"127.0.0.1:5432"}
//   {"event":"jdk.ThreadPark","start":...,"what":"java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"}
//   {"dump":"Full thread dump ..."}
//
// Stack 0 is no stack. Frames past MAX_FRAMES, stacks past MAX_STACKS and
// dumps past MAX_DUMP characters are left out.
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public final class JfrDigest {
    static final int MAX_FRAMES = 64;
    static final int MAX_STACKS = 100_000;
    static final int MAX_DUMP = 4 << 20;
    static final int MAX_TEXT = 512;

    public static void main(String[] args) throws Exception {
        Set<String> types = new HashSet<>(Arrays.asList(args).subList(1, args.length));
        PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false, "UTF-8");
        Map<List<String>, Integer> stacks = new HashMap<>();
        try (RecordingFile f = new RecordingFile(Path.of(args[0]))) {
            while (f.hasMoreEvents()) {
                RecordedEvent e = f.readEvent();
                String type = e.getEventType().getName();
                if (type.equals("jdk.ThreadDump")) {
                    String dump = e.getString("result");
                    if (dump != null) {
                        out.print("{\"dump\":");
                        str(out, dump, MAX_DUMP);
                        out.print("}\n");
                    }
                    continue;
                }
                if (!types.contains(type)) {
                    continue;
                }
                int stack = stackOf(out, stacks, e.getStackTrace());
                out.print("{\"event\":");
                str(out, type, MAX_TEXT);
                Instant start = e.getStartTime();
                out.print(",\"start\":" + (start.getEpochSecond() * 1_000_000_000L + start.getNano()));
                out.print(",\"dur\":" + e.getDuration().toNanos());
                RecordedThread t = e.getThread();
                if (t != null) {
                    String name = t.getJavaName() != null ? t.getJavaName() : t.getOSName();
                    out.print(",\"thread\":");
                    str(out, name == null ? "" : name, MAX_TEXT);
                    out.print(",\"tid\":" + t.getOSThreadId());
                }
                out.print(",\"stack\":" + stack);
                if (type.startsWith("jdk.Socket") && e.hasField("address") && e.hasField("port")) {
                    String addr = e.getString("address");
                    if (addr == null || addr.isEmpty()) {
                        addr = e.hasField("host") ? e.getString("host") : "";
                    }
                    out.print(",\"peer\":");
                    str(out, (addr.contains(":") ? "[" + addr + "]" : addr) + ":" + e.getInt("port"), MAX_TEXT);
                }
                String what = null;
                for (String field : new String[] {"monitorClass", "parkedClass"}) {
                    if (e.hasField(field)) {
                        RecordedClass c = e.getClass(field);
                        if (c != null) {
                            what = c.getName();
                        }
                    }
                }
                if (e.hasField("path")) {
                    what = e.getString("path");
                }
                if (what != null) {
                    out.print(",\"what\":");
                    str(out, what, MAX_TEXT);
                }
                out.print("}\n");
            }
        }
        out.flush();
        if (out.checkError()) {
            System.exit(1);
        }
    }

    /** The stack's number, printed with its frames the first time it is seen. */
    static int stackOf(PrintStream out, Map<List<String>, Integer> stacks, RecordedStackTrace st) {
        if (st == null) {
            return 0;
        }
        List<RecordedFrame> frames = st.getFrames();
        List<String> key = new ArrayList<>();
        for (RecordedFrame f : frames.subList(0, Math.min(frames.size(), MAX_FRAMES))) {
            key.add(f.getMethod().getType().getName() + "\u0000" + f.getMethod().getName() + "\u0000" + f.getLineNumber());
        }
        Integer id = stacks.get(key);
        if (id != null) {
            return id;
        }
        if (stacks.size() >= MAX_STACKS) {
            return 0;
        }
        id = stacks.size() + 1;
        stacks.put(key, id);
        out.print("{\"stack\":" + id + ",\"frames\":[");
        for (int i = 0; i < key.size(); i++) {
            String[] p = key.get(i).split("\u0000", 3);
            out.print(i == 0 ? "{\"c\":" : ",{\"c\":");
            str(out, p[0], MAX_TEXT);
            out.print(",\"m\":");
            str(out, p[1], MAX_TEXT);
            out.print(",\"l\":" + p[2] + "}");
        }
        out.print("]}\n");
        return id;
    }

    /** s as a JSON string, cut at max characters. */
    static void str(PrintStream out, String s, int max) {
        StringBuilder b = new StringBuilder(Math.min(s.length(), max) + 2);
        b.append('"');
        for (int i = 0; i < s.length() && i < max; i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || Character.isSurrogate(c)) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        b.append('"');
        out.print(b);
    }
}
