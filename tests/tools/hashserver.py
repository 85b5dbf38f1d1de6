#!/usr/bin/env python3
"""hashserver.py: an HTTPS upload sink on 127.0.0.1 that answers with the body's sha256.

  hashserver.py --cert C --key K [--tls 1.2|1.3|any] [--cipher NAME] [--log FILE]
      listens on a free port, prints "port=P", serves connections (one thread each) until
      killed. Each request (PUT/POST, Content-Length or chunked, "Expect: 100-continue"
      answered) gets "sha256=HEX bytes=N" back; a raw stream that does not start with an HTTP
      method ("RAW N\\n" then N bytes: openssl s_client, which cannot speak HTTP framing for a
      file) gets the same line after N bytes. Errors (a bad record MAC from a tampered
      connection) go to the log as "conn K: error: TEXT", results as "conn K: sha256=...".

The upload tests compare the hash against the file's: an independent check that every
byte the traced client encrypted arrived intact.
"""
import argparse
import hashlib
import socket
import ssl
import sys
import threading


class Reader:
    """Buffered reads from an SSL socket: lines and exact byte counts, hashed on the fly."""

    def __init__(self, s):
        self.s = s
        self.buf = bytearray()

    def fill(self):
        data = self.s.recv(1 << 16)
        if not data:
            raise EOFError("peer closed")
        self.buf += data

    def line(self):
        while b"\n" not in self.buf:
            if len(self.buf) > 65536:
                raise ValueError("header line too long")
            self.fill()
        i = self.buf.index(b"\n") + 1
        out = bytes(self.buf[:i])
        del self.buf[:i]
        return out

    def copy(self, n, h):
        while n > 0:
            if not self.buf:
                self.fill()
            k = min(n, len(self.buf))
            h.update(self.buf[:k])
            del self.buf[:k]
            n -= k


def body_http(r, s, first):
    headers = {}
    while True:
        line = r.line().strip()
        if not line:
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("expect", "").lower() == "100-continue":
        s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    h = hashlib.sha256()
    n = 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size = int(r.line().split(b";")[0].strip(), 16)
            if size == 0:
                while r.line().strip():
                    pass
                break
            r.copy(size, h)
            n += size
            r.line()
    else:
        n = int(headers.get("content-length", "0"))
        r.copy(n, h)
    msg = ("sha256=%s bytes=%d\n" % (h.hexdigest(), n)).encode()
    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(msg) + msg)
    return msg


def serve_one(a, ctx, c, cid, log):
    try:
        with ctx.wrap_socket(c, server_side=True) as s:
            r = Reader(s)
            first = r.line()
            if first.startswith(b"RAW "):
                n = int(first[4:].strip())
                h = hashlib.sha256()
                r.copy(n, h)
                msg = ("sha256=%s bytes=%d\n" % (h.hexdigest(), n)).encode()
                s.sendall(msg)
            else:
                msg = body_http(r, s, first)
            log("conn %d: %s" % (cid, msg.decode().strip()))
            try:
                s.unwrap()
            except (OSError, ValueError):
                pass
    except (OSError, ValueError, EOFError, ssl.SSLError) as e:
        log("conn %d: error: %s" % (cid, e))
    finally:
        c.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--tls", default="any")
    p.add_argument("--cipher", default="")
    p.add_argument("--log", default="")
    a = p.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    if a.tls == "1.3":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    elif a.tls == "1.2":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        if a.cipher:
            ctx.set_ciphers(a.cipher)
    lock = threading.Lock()
    out = open(a.log, "a") if a.log else sys.stderr

    def log(msg):
        with lock:
            print(msg, file=out, flush=True)

    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    print("port=%d" % ls.getsockname()[1], flush=True)
    cid = 0
    while True:
        c, _ = ls.accept()
        c.settimeout(120)
        cid += 1
        threading.Thread(target=serve_one, args=(a, ctx, c, cid, log), daemon=True).start()


if __name__ == "__main__":
    main()
