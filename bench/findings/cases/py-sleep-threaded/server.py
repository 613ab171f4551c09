"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) that paces itself:
every request calls rate_limit(), which sleeps 5 ms (time.sleep) before answering.
usage: server.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server
import time


def rate_limit():
    time.sleep(0.005)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body go out in two sends

    def do_GET(self):
        rate_limit()
        body = b"ok\n"
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
