#!/usr/bin/env python3
"""split_both.py SRC EVENTS_OUT SUMMARY_OUT: one TLSMETER_EVENTS=both trace (JSON Lines) as its
two representations, so a case can compare the analyzer's figures from each for the same run:
EVENTS_OUT keeps the per-event lines (rec, read, write) and SUMMARY_OUT the summary events;
every other line goes to both, and each header says the mode of its half."""
import json
import sys

PER_EVENT = ("rec", "read", "write")


def main(src, ev_out, sum_out):
    with open(ev_out, "w") as e, open(sum_out, "w") as s, open(src) as f:
        for line in f:
            o = json.loads(line)
            if o["ev"] == "header":
                o["config"]["TLSMETER_EVENTS"] = "summary"
                s.write(json.dumps(o) + "\n")
                o["config"]["TLSMETER_EVENTS"] = "all"
                e.write(json.dumps(o) + "\n")
            elif o["ev"] == "summary":
                s.write(line)
            elif o["ev"] in PER_EVENT:
                e.write(line)
            else:
                s.write(line)
                e.write(line)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:4])
