// An HTTP server (com.sun.net.httpserver, a pool of 16 threads) whose handler appends each
// request to a journal under one java.util.concurrent ReentrantLock: Journal.append holds
// it across a ~1 ms write to a slow device (a sleep standing for it), so the pool's
// threads wait parked on the lock (AbstractQueuedSynchronizer), not on a monitor.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.ReentrantLock;

public class Journal {
    private final ReentrantLock lock = new ReentrantLock();
    private long entries;

    long append(long stamp) throws InterruptedException {
        lock.lock();
        try {
            Thread.sleep(1);
            return ++entries ^ stamp;
        } finally {
            lock.unlock();
        }
    }

    public static void main(String[] args) throws Exception {
        Journal journal = new Journal();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            String text;
            try {
                text = journal.append(System.nanoTime()) + "\n";
            } catch (InterruptedException e) {
                text = "interrupted\n";
            }
            byte[] body = text.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
