# A threaded Python HTTP server whose every 50th request refreshes a cache by sleeping
# 200 ms (refresh_cache): the median request is fast, the slowest are those sleeps, and
# with many connections the sleeps add up to most of the requests' time.
# usage: python3 tail_sleep.py   (prints "ready PORT" once it listens on 127.0.0.1)
import http.server
import itertools
import time

counter = itertools.count()


def refresh_cache():
    time.sleep(0.2)


def lookup():
    if next(counter) % 50 == 0:
        refresh_cache()
    return b"ok\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = lookup()
        # Head and body in one write: no Nagle stall of their own.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
