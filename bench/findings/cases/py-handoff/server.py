"""A thread-per-connection HTTP server (ThreadingHTTPServer, keep-alive) whose handlers
hand their work to one worker thread: each request puts a job on a queue.Queue and waits
on the job's threading.Event; the worker thread prices the jobs one at a time (~1.5 ms of
pure-Python CPU in price_order()). The worker is the limit: requests queue for it."""
import http.server
import queue
import threading

jobs = queue.Queue()


def price_order(seed):
    best = 0
    for i in range(20000):
        s = (i * 2654435761 + seed) % 1000003
        if s > best:
            best = s
    return best


def worker():
    while True:
        job = jobs.get()
        job["answer"] = price_order(job["seed"])
        job["done"].set()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        job = {"seed": id(self) & 0xFFFF, "done": threading.Event()}
        jobs.put(job)
        job["done"].wait()
        body = b"%d\n" % job["answer"]
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
    threading.Thread(target=worker, name="pricer", daemon=True).start()
    srv = Server(("127.0.0.1", 0), Handler)
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
