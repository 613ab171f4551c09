// An HTTP server (com.sun.net.httpserver, 4 threads) that logs every order durably:
// appendOrder writes a 512-byte record to the server's one order log and forces it to the
// disk (FileChannel.force(false): fdatasync(2)) before it answers.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class Orders {
    static final AtomicLong seq = new AtomicLong();
    static FileChannel log;

    static long appendOrder() throws java.io.IOException {
        long n = seq.incrementAndGet();
        byte[] rec = new byte[512];
        Arrays.fill(rec, (byte) ('a' + n % 26));
        rec[511] = '\n';
        synchronized (Orders.class) {
            log.write(ByteBuffer.wrap(rec));
        }
        log.force(false);
        return n;
    }

    public static void main(String[] args) throws Exception {
        log = FileChannel.open(Path.of(args[0], "orders.log"), StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", exchange -> {
            byte[] body = (appendOrder() + "\n").getBytes(StandardCharsets.UTF_8);
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
