#!/usr/bin/env python3
"""recserver.py: TLS peers on 127.0.0.1 for small-record tests (one TLS record per write).

  recserver.py serve --cert C --key K --tls 1.2|1.3 --cipher NAME --size N --count M
      listens on a free port, prints "port=P", serves connections until killed: each gets
      M writes of N bytes (Python's SSLSocket.sendall of N <= 16384 bytes is one SSL_write,
      hence one record), then a clean close.
  recserver.py get --port P --cafile C [--tls 1.2|1.3] [--cipher NAME]
      connects, reads until EOF, prints "got=BYTES reads=CALLS".
"""
import argparse
import socket
import ssl
import sys


def serve(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    if a.tls == "1.3":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    else:
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(a.cipher)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    print("port=%d" % ls.getsockname()[1], flush=True)
    data = bytes(i & 0xFF for i in range(a.size))
    for _ in range(a.max_conns):  # bounded: the test stops us by PID anyway
        c, _ = ls.accept()
        try:
            with ctx.wrap_socket(c, server_side=True) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for _ in range(a.count):
                    s.sendall(data)
                s.unwrap()
        except (OSError, ssl.SSLError) as e:
            print("conn error: %s" % e, file=sys.stderr, flush=True)


def get(a):
    ctx = ssl.create_default_context(cafile=a.cafile)
    if a.tls == "1.3":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    elif a.tls == "1.2":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if a.cipher:
        ctx.set_ciphers(a.cipher)
    got = reads = 0
    with socket.create_connection(("127.0.0.1", a.port), timeout=20) as c:
        with ctx.wrap_socket(c, server_hostname="127.0.0.1") as s:
            while True:
                try:
                    b = s.recv(65536)
                except ssl.SSLZeroReturnError:
                    break
                reads += 1
                if not b:
                    break
                got += len(b)
    print("got=%d reads=%d" % (got, reads))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--tls", choices=("1.2", "1.3"), required=True)
    s.add_argument("--cipher", default="ECDHE-RSA-AES128-GCM-SHA256")
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--count", type=int, default=200)
    s.add_argument("--max-conns", type=int, default=64)
    g = sub.add_parser("get")
    g.add_argument("--port", type=int, required=True)
    g.add_argument("--cafile", required=True)
    g.add_argument("--tls", choices=("1.2", "1.3"))
    g.add_argument("--cipher")
    a = p.parse_args()
    serve(a) if a.cmd == "serve" else get(a)


if __name__ == "__main__":
    main()
