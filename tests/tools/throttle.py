#!/usr/bin/env python3
"""throttle.py PORT_FILE TARGET_PORT BYTES_PER_S [SECONDS]: a TCP proxy on 127.0.0.1 (a free
port, written to PORT_FILE) that passes the target's bytes to each client at most BYTES_PER_S
and the client's bytes through at once: a slow download from a fast server, for the cases
that attach to a download in progress (TLS passes through untouched). Exits after SECONDS
(default 300)."""
import socket
import sys
import threading
import time


def pipe(a, b, rate):
    t0, sent = time.monotonic(), 0
    try:
        while True:
            d = a.recv(16384)
            if not d:
                break
            b.sendall(d)
            sent += len(d)
            ahead = sent / rate - (time.monotonic() - t0) if rate else 0
            if ahead > 0:
                time.sleep(ahead)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    rate = float(sys.argv[3])
    end = time.monotonic() + (float(sys.argv[4]) if len(sys.argv) > 4 else 300)
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    ls.settimeout(1)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while time.monotonic() < end:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
        threading.Thread(target=pipe, args=(c, s, 0), daemon=True).start()
        threading.Thread(target=pipe, args=(s, c, rate), daemon=True).start()


if __name__ == "__main__":
    main()
