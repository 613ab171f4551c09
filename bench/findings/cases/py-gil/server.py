"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) whose handler
scores candidates with ~2 ms of pure-Python CPU in score_candidates(): the threads take
turns at the interpreter's one lock (the GIL), so the process never uses more than one CPU."""
import http.server


def score_candidates(seed):
    best = 0
    for i in range(4000):
        s = (i * 2654435761 + seed) % 1000003
        if s > best:
            best = s
    return best


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body go out in two sends

    def do_GET(self):
        body = b"%d\n" % score_candidates(id(self) & 0xFFFF)
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
