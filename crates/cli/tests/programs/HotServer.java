// An HTTP server whose requests spend their CPU in one named Java method.
// Run: java -XX:+PreserveFramePointer HotServer
// Prints "listening PORT" once it accepts on 127.0.0.1.
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public class HotServer {
    static double hotSpin(int n) {
        double x = 0;
        for (int i = 0; i < n; i++) {
            x += Math.sqrt(i * 0.5 + x);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        server.createContext("/", exchange -> {
            byte[] body = String.valueOf(hotSpin(300000)).getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        System.out.println("listening " + server.getAddress().getPort());
    }
}
