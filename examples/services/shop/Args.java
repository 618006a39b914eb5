package shop;

import java.util.HashMap;
import java.util.Map;

/** The command line: --name value or --name=value, each name one of the defaults'. */
final class Args {
    private final String program;
    private final String usage;
    private final Map<String, String> values;

    Args(String program, String usage, Map<String, String> defaults, String[] args) {
        this.program = program;
        this.usage = usage;
        this.values = new HashMap<>(defaults);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println(usage);
                System.exit(0);
            }
            if (!a.startsWith("--")) fail("unexpected argument " + a);
            String name = a.substring(2), value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                fail("--" + name + " needs a value");
                return;
            }
            if (!defaults.containsKey(name)) fail("unknown flag --" + name);
            values.put(name, value);
        }
    }

    /** HOST:PORT, split at the last colon ([::1]:8080 too). */
    String[] address(String name) {
        String v = values.get(name);
        int colon = v.lastIndexOf(':');
        if (colon <= 0) fail("--" + name + " " + v + " is not HOST:PORT");
        String host = v.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        int port = 0;
        try {
            port = Integer.parseInt(v.substring(colon + 1));
        } catch (NumberFormatException e) {
            fail("--" + name + " " + v + " is not HOST:PORT");
        }
        if (port < 0 || port > 65535) fail("--" + name + " " + v + ": the port is out of range");
        return new String[] {host, Integer.toString(port)};
    }

    int count(String name, int min, int max) {
        try {
            int n = Integer.parseInt(values.get(name));
            if (n >= min && n <= max) return n;
        } catch (NumberFormatException e) {
            // said below
        }
        fail("--" + name + " " + values.get(name) + " is not a number from " + min + " to " + max);
        return 0;
    }

    private void fail(String why) {
        System.err.println(program + ": " + why + "\n" + usage);
        System.exit(2);
    }
}
