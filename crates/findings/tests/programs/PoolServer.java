// A Java HTTP server whose pool of 4 threads sleeps 10 ms in every request: with more
// requests in flight than threads, the rest wait in the pool's queue, inside the server.
// Prints "listening on 127.0.0.1:PORT" once listening. Started by the findings tests and
// the findings corpus (bench/findings/cases/java-pool).
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

public class PoolServer {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        s.createContext("/", ex -> {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] b = "ok\n".getBytes();
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        s.setExecutor(Executors.newFixedThreadPool(4));
        s.start();
        System.out.println("listening on 127.0.0.1:" + s.getAddress().getPort());
    }
}
