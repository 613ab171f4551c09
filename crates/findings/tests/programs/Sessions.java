// An HTTP server (com.sun.net.httpserver, 4 threads) that remembers every request's
// session: rememberSession allocates 8 KiB (or the KiB its first argument gives), fills it and adds it to a queue nothing ever
// takes from. The young collections find it all alive, copy it and promote it: the old
// generation grows with every request, and no collection can free any of it.
// Prints "listening on 127.0.0.1:PORT" once listening. Started by the findings tests and
// the findings corpus (bench/findings/cases/java-leak).
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class Sessions {
    static final ConcurrentLinkedQueue<byte[]> sessions = new ConcurrentLinkedQueue<>();
    static final AtomicLong seq = new AtomicLong();
    static int size = 8192;

    static long rememberSession() {
        long n = seq.incrementAndGet();
        byte[] s = new byte[size];
        Arrays.fill(s, (byte) n);
        sessions.add(s);
        return n;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            size = Integer.parseInt(args[0]) * 1024;
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            byte[] body = (rememberSession() + "\n").getBytes(StandardCharsets.UTF_8);
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
