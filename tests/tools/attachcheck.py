#!/usr/bin/env python3
"""attachcheck.py TRACE.jsonl [CLIENT_LOG B0 B1 E0 E1]: what an attached trace saw of a download
(tests/cases/attach-download.sh). Prints "key=value" facts; exits 1 with a reason when they do
not hold:

- the header says attached, the trace has its end line, and exactly one connection opened, as
  joined (it was open before the attach);
- every read event's bytes, in order, are a contiguous run of the client's own reads (the
  client's log: "<n> <bytes> <total>" per read), so the trace saw every read between the
  attach and the detach, no more, no fewer; without a log, only the totals are printed;
- records >= 1 per 16 KiB of what the reads returned (a record carries at most 16 KiB), but
  for the first read's, which may come from a record decrypted before the attach, and the
  record bytes within 16 KiB of the bytes read at each end."""
import json
import sys


def main():
    reads, recs, rec_bytes, conns, header, end = [], 0, 0, [], None, None
    with open(sys.argv[1]) as f:
        for line in f:
            e = json.loads(line)
            ev = e.get('ev')
            if ev == 'header':
                header = e
            elif ev == 'end':
                end = e
            elif ev == 'read' and e.get('got', 0) > 0:
                reads.append(e['got'])
            elif ev == 'rec' and e.get('dir') == 'in' and e.get('type') == 23:
                recs += 1
                rec_bytes += e.get('pt', 0)
            elif ev == 'conn' and e.get('phase') == 'open':
                conns.append(e)
    got = sum(reads)
    print(f'reads={len(reads)} bytes={got} records={recs} record_bytes={rec_bytes}')
    if not header or not header.get('attached'):
        return fail('the header does not say attached')
    if not end:
        return fail('no end line')
    if len(conns) != 1 or not conns[0].get('joined'):
        return fail(f'connections opened: {[(c.get("conn"), c.get("joined")) for c in conns]}')
    if got == 0 or (recs + 1) * 16384 < got or abs(rec_bytes - got) > 2 * 16384:
        return fail(f'{recs} records of {rec_bytes} bytes for {got} bytes read')
    if len(sys.argv) > 2:
        client = []
        with open(sys.argv[2]) as f:
            for line in f:
                client.append(int(line.split()[1]))
        at = find_run(client, reads)
        if at >= 0 and find_run(client[at + 1:], reads) >= 0:
            return fail('the client\'s read sizes do not tell where the traced run lies')
        if at < 0:
            return fail(f'the {len(reads)} traced reads are not a run of the client\'s '
                        f'{len(client)} reads')
        start = sum(client[:at])
        end = start + sum(client[at:at + len(reads)])
        print(f'client_reads={len(client)} window={at + 1}..{at + len(reads)} '
              f'client_bytes_in_window={end - start} from={start} to={end}')
        b0, b1, e0, e1 = (int(x) for x in sys.argv[3:7])
        if not b0 <= start <= b1 or not e0 <= end <= e1:
            return fail(f'the run {start}..{end} is not where the attach ({b0}..{b1}) and the '
                        f'detach ({e0}..{e1}) were')
    return 0


def find_run(whole, part):
    n = len(part)
    for i in range(len(whole) - n + 1):
        if whole[i] == part[0] and whole[i:i + n] == part:
            return i
    return -1


def fail(why):
    print(f'FAIL {why}')
    return 1


if __name__ == '__main__':
    sys.exit(main())
