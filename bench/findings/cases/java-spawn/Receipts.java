// An HTTP server (com.sun.net.httpserver, 4 threads) that stamps every receipt with the
// output of `date +%s`: stampReceipt starts the program (ProcessBuilder: the JDK spawns it
// through its jspawnhelper), reads its output to the end and waits for it to exit.
// GET /metrics answers the server's own timing of stampReceipt: {calls, ns, now_ns}.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class Receipts {
    static final AtomicLong calls = new AtomicLong();
    static final AtomicLong spentNs = new AtomicLong();
    static final long start = System.nanoTime();

    static String stampReceipt() throws Exception {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder("date", "+%s").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        spentNs.addAndGet(System.nanoTime() - t0);
        calls.incrementAndGet();
        return out;
    }

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            String body;
            try {
                body = stampReceipt() + "\n";
            } catch (Exception e) {
                body = "error " + e + "\n";
            }
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, b.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(b);
            }
        });
        server.createContext("/metrics", exchange -> {
            byte[] b = String.format("{\"calls\": %d, \"ns\": %d, \"now_ns\": %d}\n", calls.get(), spentNs.get(), System.nanoTime() - start).getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, b.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(b);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
