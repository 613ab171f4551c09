// An HttpServer (the JDK's) with a pool of 16 threads whose handler signs each receipt:
// 300 rounds of SHA-256 over a 4 KiB sheet (Receipt.sign, ~1 ms of CPU). Started with
// -Dsun.net.httpserver.nodelay=true: nothing but the work slows it.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.concurrent.Executors;

public class ReceiptServer {
    static final class Receipt {
        static byte[] sign(byte seed) throws Exception {
            byte[] sheet = new byte[4096];
            sheet[0] = seed;
            MessageDigest h = MessageDigest.getInstance("SHA-256");
            byte[] sum = new byte[0];
            for (int round = 0; round < 300; round++) {
                h.reset();
                h.update(sum);
                h.update(sheet);
                sum = h.digest();
            }
            return sum;
        }
    }

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        server.createContext("/", ex -> {
            byte[] body;
            try {
                body = (HexFormat.of().formatHex(Receipt.sign((byte) ex.getRequestURI().getPath().length()), 0, 4) + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            } catch (Exception e) {
                body = ("error: " + e + "\n").getBytes(StandardCharsets.UTF_8);
            }
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
