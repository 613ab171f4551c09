// An HTTP server whose pool of 16 threads posts each request to one ledger under its
// monitor: Ledger.post is synchronized and computes for about a millisecond while it holds
// it, so the pool's threads wait BLOCKED on the ledger. Once it is hot the JIT inlines
// post into its caller, and a profile's compiled frames no longer name it.
// Run: java -XX:+PreserveFramePointer -Dsun.net.httpserver.nodelay=true LedgerServer
// Prints "listening PORT" once it accepts on 127.0.0.1.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

class Ledger {
    private long balance = 17;

    synchronized long post(long amount) {
        long x = balance ^ amount;
        for (int i = 0; i < 800_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        balance = x;
        return x;
    }
}

public class LedgerServer {
    public static void main(String[] args) throws Exception {
        Ledger ledger = new Ledger();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            byte[] body = (ledger.post(System.nanoTime()) + "\n").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
        System.out.println("listening " + server.getAddress().getPort());
    }
}
