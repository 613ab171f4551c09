// A Java HTTP server whose 16 handler threads hand every request's work to one worker
// thread (a single-thread executor) and wait for its Future: the worker prices the orders
// one at a time (~1 ms of CPU in price()), the limit while the handlers wait.
// Prints "listening on 127.0.0.1:PORT" once listening.
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

public class HandoffServer {
    static long price(long seed) {
        long best = 0;
        for (int i = 0; i < 400_000; i++) {
            long s = (i * 2654435761L + seed) % 1000003;
            if (s > best) best = s;
        }
        return best;
    }

    public static void main(String[] args) throws Exception {
        ExecutorService pricer = Executors.newSingleThreadExecutor(r -> new Thread(r, "pricer"));
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        s.createContext("/", ex -> {
            long answer;
            try {
                long seed = System.nanoTime() & 0xffff;
                answer = pricer.submit(() -> price(seed)).get();
            } catch (Exception e) {
                answer = -1;
            }
            byte[] b = (answer + "\n").getBytes();
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        s.setExecutor(Executors.newFixedThreadPool(16));
        s.start();
        System.out.println("listening on 127.0.0.1:" + s.getAddress().getPort());
    }
}
