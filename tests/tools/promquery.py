#!/usr/bin/env python3
"""promquery.py: ask a Prometheus on 127.0.0.1 through its HTTP API (standard library only).

  promquery.py query --port P EXPR [--time T]
      instant query; prints one JSON line per sample, {"labels": {...}, "value": float}
      (a scalar result: labels {}). Exits 2 with the server's message when the status is not
      "success" (a bad expression, a server that does not answer).

  promquery.py monotonic --port P --start T0 --end T1 --step S REGEX
      for every series whose metric name matches REGEX (the expression {__name__=~"REGEX"},
      fully anchored as PromQL anchors it), a range query over [T0, T1] every S seconds, and a
      check that no value ever decreases from one point to the next (a counter that goes back
      is a reset or a bug). One line per series (its points, first and last value), then
      "N series, M points, K decreases". Exits 1 when a value decreased (the series and the
      two values are printed) or when fewer than --min-series (default 1) series matched.

  promquery.py wait --port P EXPR --min V --timeout S
      polls the instant query (every 0.2 s, at most S seconds) until one sample has a value
      >= V; prints that result as `query` does. Exits 1 on timeout (with the last result).

  promquery.py ready --port P [--path /-/ready] [--timeout S] [--pid PID]
      polls GET PATH (every 0.05 s, at most S seconds) until it answers 200; gives up at once
      when process PID is gone. Exits 1 on timeout or when PID died (for tests/lib-prom.sh).

Times (T, T0, T1) are what the API takes: unix seconds (decimals allowed) or RFC 3339.
"""
import argparse
import json
import math
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 5  # seconds, per HTTP request


class PromError(Exception):
    pass


def api(host, port, path, params):
    url = "http://%s:%d%s?%s" % (host, port, path, urllib.parse.urlencode(params))
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            body = r.read()
    except urllib.error.HTTPError as e:  # 400/422/503 carry a JSON error body
        body = e.read()
        if not body:
            raise PromError("%s: HTTP %d" % (url, e.code))
    except (urllib.error.URLError, OSError) as e:
        raise PromError("%s: %s" % (url, getattr(e, "reason", e)))
    try:
        doc = json.loads(body)
    except ValueError:
        raise PromError("%s: not JSON: %r" % (url, body[:200]))
    if doc.get("status") != "success":
        raise PromError("%s: status %s: %s: %s" % (url, doc.get("status"),
                                                    doc.get("errorType"), doc.get("error")))
    for w in doc.get("warnings") or []:
        print("promquery: warning: %s" % w, file=sys.stderr)
    return doc["data"]


def samples(data):
    """The samples of an instant query's data as (labels, value) pairs."""
    kind, res = data["resultType"], data["result"]
    if kind == "vector":
        return [(s["metric"], float(s["value"][1])) for s in res]
    if kind in ("scalar", "string"):
        return [({}, float(res[1]) if kind == "scalar" else res[1])]
    raise PromError("unexpected result type %s for an instant query" % kind)


def instant(a, expr):
    params = {"query": expr}
    if getattr(a, "time", None):
        params["time"] = a.time
    return samples(api(a.host, a.port, "/api/v1/query", params))


def show(ss):
    for labels, value in ss:
        print(json.dumps({"labels": labels, "value": value}, sort_keys=True))


def series_name(labels):
    name = labels.get("__name__", "")
    rest = ",".join('%s="%s"' % (k, v) for k, v in sorted(labels.items()) if k != "__name__")
    return "%s{%s}" % (name, rest)


def cmd_query(a):
    show(instant(a, a.expr))
    return 0


def cmd_monotonic(a):
    try:
        re.compile(a.regex)
    except re.error as e:
        raise PromError("bad REGEX %r: %s" % (a.regex, e))
    expr = '{__name__=~"%s"}' % a.regex.replace("\\", "\\\\").replace('"', '\\"')
    data = api(a.host, a.port, "/api/v1/query_range",
               {"query": expr, "start": a.start, "end": a.end, "step": a.step})
    if data["resultType"] != "matrix":
        raise PromError("unexpected result type %s for a range query" % data["resultType"])
    nseries = npoints = ndec = 0
    for s in sorted(data["result"], key=lambda s: series_name(s["metric"])):
        name = series_name(s["metric"])
        pts = [(float(t), float(v)) for t, v in s["values"]]
        nseries += 1
        npoints += len(pts)
        for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
            # NaN compares false either way: a NaN point in a counter is a decrease too.
            if not v1 >= v0 or math.isnan(v1):
                ndec += 1
                print("DECREASE %s: %r at %.3f -> %r at %.3f" % (name, v0, t0, v1, t1))
        if pts:
            print("%s: %d points, first %r, last %r" % (name, len(pts), pts[0][1], pts[-1][1]))
    print("%d series, %d points, %d decreases" % (nseries, npoints, ndec))
    if nseries < a.min_series:
        print("promquery: %d series match %s, want at least %d" % (nseries, expr, a.min_series),
              file=sys.stderr)
        return 1
    return 1 if ndec else 0


def cmd_wait(a):
    deadline = time.monotonic() + a.timeout
    last, err = [], None
    while True:
        try:
            last, err = instant(a, a.expr), None
            hit = [s for s in last if isinstance(s[1], float) and s[1] >= a.min]
            if hit:
                show(last)
                return 0
        except PromError as e:  # not up yet: keep polling until the deadline
            err = e
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    print("promquery: no sample of %s reached %r in %g s; last: %s" %
          (a.expr, a.min, a.timeout, err or json.dumps([[l, v] for l, v in last])),
          file=sys.stderr)
    return 1


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (our parent has not reaped it yet) is gone for our purpose.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmd_ready(a):
    url = "http://%s:%d%s" % (a.host, a.port, a.path)
    deadline = time.monotonic() + a.timeout
    why = "no answer"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                r.read()
                if r.status == 200:
                    return 0
                why = "HTTP %d" % r.status
        except urllib.error.HTTPError as e:
            why = "HTTP %d" % e.code
        except (urllib.error.URLError, OSError) as e:
            why = str(getattr(e, "reason", e))
        if a.pid and not alive(a.pid):
            print("promquery: process %d exited before %s answered" % (a.pid, url),
                  file=sys.stderr)
            return 1
        if time.monotonic() >= deadline:
            print("promquery: %s did not answer 200 in %g s (%s)" % (url, a.timeout, why),
                  file=sys.stderr)
            return 1
        time.sleep(0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("--port", type=int, required=True)
        sp.add_argument("--host", default="127.0.0.1")

    q = sub.add_parser("query", help="instant query, JSON lines")
    common(q)
    q.add_argument("expr")
    q.add_argument("--time")
    q.set_defaults(fn=cmd_query)

    m = sub.add_parser("monotonic", help="no series matching REGEX ever decreases")
    common(m)
    m.add_argument("--start", required=True)
    m.add_argument("--end", required=True)
    m.add_argument("--step", required=True)
    m.add_argument("--min-series", type=int, default=1)
    m.add_argument("regex")
    m.set_defaults(fn=cmd_monotonic)

    w = sub.add_parser("wait", help="poll until a sample reaches --min")
    common(w)
    w.add_argument("expr")
    w.add_argument("--min", type=float, required=True)
    w.add_argument("--timeout", type=float, required=True)
    w.add_argument("--time")
    w.set_defaults(fn=cmd_wait)

    r = sub.add_parser("ready", help="poll until GET PATH answers 200")
    common(r)
    r.add_argument("--path", default="/-/ready")
    r.add_argument("--timeout", type=float, default=10)
    r.add_argument("--pid", type=int)
    r.set_defaults(fn=cmd_ready)

    a = p.parse_args()
    try:
        return a.fn(a)
    except PromError as e:
        print("promquery: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
