"""A hit counter in an SQLite file: every request opens a write transaction on its
thread's own connection (BEGIN IMMEDIATE), adds one to a row, and commits (a rollback
journal, synced). One connection at a time may write: the others wait in SQLite's busy
handler, which sleeps and tries again. Prints "ready PORT".
usage: python3 sqlite_hits.py DB-FILE"""
import sqlite3
import sys
import threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

DB = sys.argv[1]
setup = sqlite3.connect(DB)
setup.execute("create table if not exists hits(id integer primary key, n integer)")
setup.execute("insert or ignore into hits values (1, 0)")
setup.commit()
setup.close()
local = threading.local()


def connection():
    if not hasattr(local, "db"):
        local.db = sqlite3.connect(DB, timeout=30, isolation_level=None)
    return local.db


def record_hit():
    db = connection()
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE hits SET n = n + 1 WHERE id = 1")
    db.execute("COMMIT")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        record_hit()
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
