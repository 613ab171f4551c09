"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) that counts each
page view in an SQLite file (count_view): each thread its own connection, each view a
write transaction (BEGIN IMMEDIATE, an UPDATE, COMMIT with the rollback journal synced).
One connection writes at a time; the others wait in SQLite's busy handler, which sleeps
and tries again. GET /stats answers the server's own account: views, and the time they
spent in count_view (ns, time.monotonic_ns around it).
usage: server.py DB-FILE  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server
import json
import sqlite3
import sys
import threading
import time

DB = sys.argv[1]
STATS_LOCK = threading.Lock()
STATS = {"views": 0, "count_ns": 0}
local = threading.local()


def connection():
    if not hasattr(local, "db"):
        local.db = sqlite3.connect(DB, timeout=30, isolation_level=None)
    return local.db


def count_view():
    db = connection()
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE views SET n = n + 1 WHERE page = 1")
    db.execute("COMMIT")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        if self.path == "/stats":
            with STATS_LOCK:
                body = json.dumps(dict(STATS, now_ns=time.monotonic_ns())).encode() + b"\n"
        else:
            t0 = time.monotonic_ns()
            count_view()
            t1 = time.monotonic_ns()
            with STATS_LOCK:
                STATS["views"] += 1
                STATS["count_ns"] += t1 - t0
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
    setup = sqlite3.connect(DB)
    setup.execute("create table if not exists views(page integer primary key, n integer)")
    setup.execute("insert or ignore into views values (1, 0)")
    setup.commit()
    setup.close()
    srv = Server(("127.0.0.1", 0), Handler)
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
