// An HttpServer with a pool of 16 threads that writes a 1 KiB access-log line per request
// (logRequest) through one PrintStream (its methods synchronized) into LOG-FILE, a pipe to
// a slow collector (a FIFO, or /proc/self/fd/3): one thread waits in write(2) for room in
// the pipe while holding the stream's monitor, the others wait to enter it.
// usage: AccessLog LOG-FILE
import com.sun.net.httpserver.HttpServer;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public class AccessLog {
    static PrintStream LOG;

    static void logRequest(String path, long at) {
        LOG.println(at + " GET " + path + " 200 " + "x".repeat(1000));
    }

    public static void main(String[] args) throws Exception {
        LOG = new PrintStream(new FileOutputStream(args[0]), true, StandardCharsets.UTF_8);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            byte[] body = "ok\n".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
            logRequest(exchange.getRequestURI().getPath(), System.nanoTime());
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
