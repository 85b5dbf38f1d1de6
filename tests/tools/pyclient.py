#!/usr/bin/env python3
"""pyclient.py: an HTTPS/1.0 GET with Python's ssl module, the tlsmeter tests' Python peer.

Python loads libssl RTLD_LOCAL when `ssl` is imported, after start-up: the case the preload
must handle without RTLD_NEXT. Prints one line `got=N body=N sha256=HEX` (got: bytes read from
TLS, HTTP header included). Exit 0 on success, 3 on an SSL error, 4 on another error; the
error goes to stderr as `error: CLASS: REASON` (stable text, no addresses).
"""
import argparse
import hashlib
import socket
import sys


def download(args):
    import ssl  # imported here on purpose: libssl arrives by dlopen, mid-run

    ctx = ssl.create_default_context(cafile=args.cafile)
    got = 0
    head = b""
    sha = hashlib.sha256()
    body = 0
    out = open(args.out, "wb") if args.out else None
    with socket.create_connection((args.host, args.port), timeout=60) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n" % args.path.encode())
            in_head = True
            while True:
                chunk = tls.recv(args.bufsize)
                if not chunk:
                    break
                got += len(chunk)
                if in_head:
                    head += chunk
                    i = head.find(b"\r\n\r\n")
                    if i < 0:
                        continue
                    chunk = head[i + 4:]
                    in_head = False
                sha.update(chunk)
                body += len(chunk)
                if out:
                    out.write(chunk)
    if out:
        out.close()
    print("got=%d body=%d sha256=%s" % (got, body, sha.hexdigest()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--path", default="/")
    ap.add_argument("--out", help="write the body here")
    ap.add_argument("--bufsize", type=int, default=65536)
    args = ap.parse_args()
    try:
        download(args)
    except Exception as e:  # report the class and reason only: stable across runs
        import ssl

        reason = getattr(e, "reason", None) or e.__class__.__name__
        print("error: %s: %s" % (e.__class__.__name__, reason), file=sys.stderr)
        return 3 if isinstance(e, ssl.SSLError) else 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
