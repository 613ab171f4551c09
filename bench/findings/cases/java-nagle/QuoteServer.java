// An HttpServer (the JDK's com.sun.net.httpserver) with a pool of 16 threads, as the JDK
// makes it: TCP_NODELAY off unless -Dsun.net.httpserver.nodelay=true, and a response's
// head and body written apart. The work (quote) is a map lookup. GET /stats answers the
// responses sent so far and the JVM's clock (System.nanoTime: CLOCK_MONOTONIC).
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class QuoteServer {
    static final Map<String, Double> PRICES = new HashMap<>();
    static final AtomicLong RESPONSES = new AtomicLong();

    static double quote(String path) {
        return PRICES.getOrDefault(path.replace("/", ""), 0.0);
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 1000; i++) PRICES.put("sku-" + i, i * 1.25);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", ex -> {
            String text = ex.getRequestURI().getPath().equals("/stats")
                ? "{\"responses\": " + RESPONSES.get() + ", \"now_ns\": " + System.nanoTime() + "}\n"
                : String.format("%.2f%n", quote(ex.getRequestURI().getPath()));
            byte[] body = text.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
            RESPONSES.incrementAndGet();
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
