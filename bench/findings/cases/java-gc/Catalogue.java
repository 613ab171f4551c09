// An HTTP server (com.sun.net.httpserver, 4 threads) in a small heap whose handler builds
// each answer from ~40,000 short-lived objects (buildPage) and keeps the last 10 pages in a
// cache that turns over (recent): objects live long enough to be copied and promoted, the
// old generation fills with pages already dropped, and the collector runs most of the time.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class Catalogue {
    static final int KEEP = 10;
    static final Object[] recent = new Object[KEEP];
    static final AtomicLong seq = new AtomicLong();

    static long buildPage(long n) {
        List<String> lines = new ArrayList<>();
        long sum = 0;
        for (int i = 0; i < 20_000; i++) {
            String s = "item-" + (n + i);
            lines.add(s);
            sum += s.length();
        }
        recent[(int) (n % KEEP)] = lines;
        return sum;
    }

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            byte[] body = (buildPage(seq.incrementAndGet()) + "\n").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
