"""An order log that makes every request durable on its own: a thread-per-connection HTTP
server (ThreadingHTTPServer, keep-alive) whose handler calls append_order(), which writes
a 512-byte record to the server's one log file (O_APPEND) and calls os.fsync before
answering.
usage: server.py LOG-DIR  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server
import itertools
import os
import sys

LOG_FD = None
SEQ = itertools.count(1)


def append_order(n):
    rec = (b"order %d" % n).ljust(511) + b"\n"
    os.write(LOG_FD, rec)
    os.fsync(LOG_FD)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body go out in two sends

    def do_GET(self):
        append_order(next(SEQ))
        body = b"stored\n"
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
    LOG_FD = os.open(os.path.join(sys.argv[1], "orders.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
    srv = Server(("127.0.0.1", 0), Handler)
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
