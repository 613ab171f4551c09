# A threaded Python HTTP server whose handlers hand every request's work to one worker
# thread: each puts a job on a queue.Queue and waits on the job's threading.Event while
# the worker prices the jobs one at a time (price_order: ~1.5 ms of pure-Python CPU).
# The worker is the limit; the handlers wait for it (and, briefly, for the GIL).
# usage: python3 handoff.py   (prints "ready PORT" once it listens on 127.0.0.1)
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
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


threading.Thread(target=worker, daemon=True).start()
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
