package shop;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The orders taken, the latest 1000 kept in memory. */
public final class Orders {
    private static final int KEPT = 1000;
    private static final Pattern ITEM = Pattern.compile("\"item\"\\s*:\\s*\"([A-Za-z0-9 _.-]{1,100})\"");
    private static final Pattern QUANTITY = Pattern.compile("\"quantity\"\\s*:\\s*(\\d{1,6})\\b");

    /** One order, as JSON. */
    public record Order(long id, String item, int quantity) {
        public String json() {
            return "{\"id\":" + id + ",\"item\":\"" + item + "\",\"quantity\":" + quantity + "}";
        }
    }

    private final Deque<Order> latest = new ArrayDeque<>();
    private long lastId;

    /** Takes the order a request's JSON body says ({"item":"book","quantity":2}), or says what is wrong with it. */
    public synchronized Order add(String body) throws IllegalArgumentException {
        Matcher item = ITEM.matcher(body), quantity = QUANTITY.matcher(body);
        if (!item.find()) throw new IllegalArgumentException("the order needs an \"item\"");
        if (!quantity.find() || Integer.parseInt(quantity.group(1)) < 1) {
            throw new IllegalArgumentException("the order needs a \"quantity\" of 1 or more");
        }
        Order o = new Order(++lastId, item.group(1), Integer.parseInt(quantity.group(1)));
        latest.addLast(o);
        if (latest.size() > KEPT) latest.removeFirst();
        return o;
    }

    public synchronized Order find(long id) {
        for (Order o : latest) {
            if (o.id() == id) return o;
        }
        return null;
    }

    /** The latest orders, at most n, newest first. */
    public synchronized List<Order> latest(int n) {
        List<Order> out = new ArrayList<>(Math.min(n, latest.size()));
        var it = latest.descendingIterator();
        while (it.hasNext() && out.size() < n) out.add(it.next());
        return out;
    }
}
