# A Python program for kiln's python tests: the main thread burns CPU in hot_loop, under
# handle, under main; a second thread works in other_work in bursts, between sleeps.
import sys
import threading
import time


def hot_loop(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def handle():
    while True:
        hot_loop(100000)


def other_work():
    x = 0
    for j in range(100000):
        x += j % 7
    return x


def background():
    while True:
        other_work()
        time.sleep(0.01)


def main():
    threading.Thread(target=background, name="background", daemon=True).start()
    print("ready", flush=True)
    handle()


if __name__ == "__main__":
    main()
