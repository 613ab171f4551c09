# A pre-forking HTTP server, as gunicorn's sync workers are: the master binds, forks two
# workers and waits for them; each worker accepts one connection at a time, answers one
# request after a 10 ms blocking call (lookup_inventory: a database, as a sleep) and
# closes it. Two workers serve at most 200 requests a second; more clients wait in the
# listening socket's accept queue.
# usage: python3 prefork.py   (prints "ready PORT" once it listens on 127.0.0.1)
import ctypes
import os
import signal
import socket
import time

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(128)


def lookup_inventory():
    time.sleep(0.01)


def serve():
    while True:
        conn, _ = listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(4096)
            if not more:
                break
            data += more
        lookup_inventory()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
        conn.close()


for _ in range(2):
    if os.fork() == 0:
        # Ended with the master, however it ends (PR_SET_PDEATHSIG).
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        if os.getppid() == 1:
            os._exit(0)
        serve()
print("ready", listener.getsockname()[1], flush=True)
os.wait()
