#!/usr/bin/env python3
"""tamper_proxy.py: a loopback TCP relay that corrupts one TLS application-data record.

Relays client <-> server on 127.0.0.1 and parses the TLS record headers of both directions.
Once the client has sent application data (its first type-23 record for TLS 1.2; its second
for TLS 1.3, whose first is the encrypted Finished), every later server->client type-23
record is a response record; the Nth of those (--nth, default 3) that carries at least
--min-len bytes (default 4096) gets one byte in the middle of its ciphertext flipped.
Handshake records, the TLS 1.3 encrypted handshake and the session tickets (small type-23
records that may arrive after the request) are never touched, so the handshake succeeds, the
flip lands on the same response bytes every run, and the client must reject that record.

With --sending client (the encrypting side under test) the flip lands on the client's
records instead: the Nth client->server type-23 record of at least --min-len bytes (the
TLS 1.3 encrypted Finished is far smaller), so the server must reject it.

Writes the listening port to --port-file once it listens, logs what it did to stderr, serves
at most --max-conns connections, and stops by itself after --timeout seconds.

At each connection's end it logs what it relayed per direction, an instrument independent of
tlsmeter: "tamper_proxy: conn N: s2c bytes=B records=R enc_records=E enc_bytes=EB" (and c2s),
enc_* being the encrypted records (type 23, or any after that direction's ChangeCipherSpec,
which itself is not counted), with their 5-byte headers. --nth 0 relays without flipping.
"""
import argparse
import os
import socket
import sys
import threading
import time


class Stream:
    """Splits a byte stream into TLS records (header + body), keeping partial input."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 5:
            n = int.from_bytes(self.buf[3:5], "big")
            if len(self.buf) < 5 + n:
                break
            out.append(bytearray(self.buf[: 5 + n]))
            del self.buf[: 5 + n]
        return out


class Conn:
    def __init__(self, args, client, cid):
        self.args = args
        self.client = client
        self.cid = cid
        self.client_app = threading.Event()
        self.c2s_type23 = 0
        self.s2c_after = 0
        self.flipped = False
        self.server = socket.create_connection(("127.0.0.1", args.target_port), timeout=args.timeout)

    def log(self, msg):
        print("tamper_proxy: conn %d: %s" % (self.cid, msg), file=sys.stderr, flush=True)

    def c2s_record(self, rec):
        if self.args.sending == "client":
            return self.flip(rec, rec[0] == 23)
        if rec[0] == 23:
            self.c2s_type23 += 1
            # Set before the record is forwarded: the response can only come after it.
            if self.c2s_type23 >= (2 if self.args.tls == "1.3" else 1):
                self.client_app.set()
        return rec

    def flip(self, rec, app):
        """The client-sending mode: flip the Nth large application-data record."""
        if not app or self.flipped or len(rec) - 5 < self.args.min_len:
            return rec
        self.s2c_after += 1
        if self.s2c_after == self.args.nth:
            off = 5 + (len(rec) - 5) // 2
            rec[off] ^= 0x01
            self.flipped = True
            self.log("flipped byte %d of client record %d (len %d)"
                     % (off - 5, self.s2c_after, len(rec) - 5))
        return rec

    def s2c_record(self, rec):
        if self.args.sending == "client":
            return rec
        if rec[0] != 23 or not self.client_app.is_set() or self.flipped:
            return rec
        if len(rec) - 5 < self.args.min_len:
            return rec
        self.s2c_after += 1
        if self.s2c_after == self.args.nth:
            off = 5 + (len(rec) - 5) // 2
            rec[off] ^= 0x01
            self.flipped = True
            self.log("flipped byte %d of response record %d (len %d)"
                     % (off - 5, self.s2c_after, len(rec) - 5))
        return rec

    def pump(self, src, dst, on_record, name):
        stream = Stream()
        n = dict(bytes=0, records=0, enc_records=0, enc_bytes=0)
        ccs = False
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                n["bytes"] += len(data)
                for rec in stream.feed(data):
                    n["records"] += 1
                    if rec[0] == 23 or (ccs and rec[0] != 20):
                        n["enc_records"] += 1
                        n["enc_bytes"] += len(rec)
                    ccs |= rec[0] == 20
                    dst.sendall(on_record(rec))
            if stream.buf:
                dst.sendall(bytes(stream.buf))
        except OSError:
            pass
        self.log("%s %s" % (name, " ".join("%s=%d" % kv for kv in n.items())))
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self):
        t = threading.Thread(target=self.pump,
                             args=(self.client, self.server, self.c2s_record, "c2s"), daemon=True)
        t.start()
        self.pump(self.server, self.client, self.s2c_record, "s2c")
        t.join(self.args.timeout)
        if not self.flipped:
            self.log("closed before record %d: nothing flipped" % self.args.nth)
        self.client.close()
        self.server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-port", type=int, required=True)
    ap.add_argument("--tls", choices=("1.2", "1.3"), required=True)
    ap.add_argument("--nth", type=int, default=3)
    ap.add_argument("--min-len", type=int, default=4096)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--max-conns", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--sending", choices=("server", "client"), default="server",
                    help="whose records to flip (default: the server's responses)")
    args = ap.parse_args()

    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    lsock.settimeout(1.0)
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % lsock.getsockname()[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    deadline = time.monotonic() + args.timeout
    threads = []
    for cid in range(1, args.max_conns + 1):
        client = None
        while time.monotonic() < deadline:
            try:
                client, _ = lsock.accept()
                break
            except socket.timeout:
                continue
        if client is None:
            break
        client.settimeout(args.timeout)
        t = threading.Thread(target=Conn(args, client, cid).run, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
