"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive, TCP_NODELAY) whose
handler asks a command-line tool for each answer (stamp_receipt: subprocess.run of
`date +%s`, its output captured) and waits for it.
usage: spawn_per_request.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import http.server
import subprocess


def stamp_receipt():
    return subprocess.run(["date", "+%s"], capture_output=True, check=True).stdout


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body go out in two sends

    def do_GET(self):
        body = stamp_receipt()
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
