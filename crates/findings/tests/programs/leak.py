"""A server that keeps 256 KiB of every request it answers (a cache never evicted, a
list of sessions never pruned): its memory grows with the requests until something
stops it. Prints "ready PORT". usage: python3 leak.py"""
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

kept = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        remember(bytearray(256 * 1024))
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


def remember(session):
    kept.append(session)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
