"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) whose handler posts
each order to a ledger under one threading.Lock (post_entry), and the ledger's write takes
about a millisecond (write_ledger: a sleep standing for a slow device): the threads queue
on the lock. GET /stats answers the server's own account: how many posts, how long they
waited for the lock and held it (ns, time.monotonic_ns around acquire and release).
usage: server.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server
import json
import threading
import time

LEDGER_LOCK = threading.Lock()
STATS_LOCK = threading.Lock()
STATS = {"posts": 0, "lock_wait_ns": 0, "lock_held_ns": 0}


def write_ledger():
    time.sleep(0.001)


def post_entry():
    t0 = time.monotonic_ns()
    with LEDGER_LOCK:
        t1 = time.monotonic_ns()
        write_ledger()
        t2 = time.monotonic_ns()
    with STATS_LOCK:
        STATS["posts"] += 1
        STATS["lock_wait_ns"] += t1 - t0
        STATS["lock_held_ns"] += t2 - t1


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body go out in two sends

    def do_GET(self):
        if self.path == "/stats":
            with STATS_LOCK:
                body = json.dumps(dict(STATS, now_ns=time.monotonic_ns())).encode() + b"\n"
        else:
            post_entry()
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
