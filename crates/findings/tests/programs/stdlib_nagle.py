"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) as the standard
library makes it: the handler's head and body go out in two sends (end_headers flushes the
head, then the body is written), and the socket keeps Nagle's algorithm on (the handler's
disable_nagle_algorithm is False by default). The work itself (quote) is a dictionary
lookup. usage: stdlib_nagle.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server

PRICES = {f"sku-{i}": i * 1.25 for i in range(1000)}


def quote(path):
    return PRICES.get(path.strip("/") or "sku-7", 0.0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = f"{quote(self.path):.2f} ok".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
