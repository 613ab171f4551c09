"""A slow log collector: reads its standard input 32 KiB every 100 ms (~320 KiB/s)."""
import os
import time

while os.read(0, 32768):
    time.sleep(0.1)
