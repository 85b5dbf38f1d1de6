#!/usr/bin/env python3
"""pyupload.py: uploads a file over Python's ssl (the system libssl) to tests/tools/hashserver.py.

  pyupload.py --port P --cafile C --file F [--tls 1.2|1.3] [--cipher NAME] [--chunk N]
      sends "RAW <size>\\n" and the file with SSLSocket.sendall in --chunk pieces (default
      1 MiB: libssl splits each into 16 KiB records), prints the server's answer
      ("sha256=HEX bytes=N"), exits 0 when it came, 1 on an error (printed).
"""
import argparse
import os
import socket
import ssl
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cafile", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--tls", default="")
    p.add_argument("--cipher", default="")
    p.add_argument("--chunk", type=int, default=1 << 20)
    a = p.parse_args()
    ctx = ssl.create_default_context(cafile=a.cafile)
    if a.tls == "1.3":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    elif a.tls == "1.2":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        if a.cipher:
            ctx.set_ciphers(a.cipher)
    size = os.path.getsize(a.file)
    try:
        with socket.create_connection(("127.0.0.1", a.port), timeout=60) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"RAW %d\n" % size)
                with open(a.file, "rb") as f:
                    while True:
                        b = f.read(a.chunk)
                        if not b:
                            break
                        s.sendall(b)
                answer = b""
                while True:
                    d = s.recv(4096)
                    if not d:
                        break
                    answer += d
    except (OSError, ssl.SSLError) as e:
        print("error: %s" % e)
        return 1
    sys.stdout.write(answer.decode(errors="replace"))
    return 0 if answer.startswith(b"sha256=") else 1


if __name__ == "__main__":
    sys.exit(main())
