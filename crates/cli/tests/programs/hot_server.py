# An HTTP server (the standard library's http.server, one thread) whose requests spend
# their CPU in one Python function, hot_spin, called by the handler's do_GET.
# Run: python3 hot_server.py. Prints "listening PORT" once it accepts on 127.0.0.1.
import http.server


def hot_spin(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = str(hot_spin(20000)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
