#!/usr/bin/env python3
"""lock.py -- the Python binding: a lock as a context manager, a fencing
token, and the report of a refusal, on the nodes of the command line.

    lock.py URI...   (exit 0 when the locks behaved so)"""
import sys

import libredlock


def main(nodes):
    try:
        rl = libredlock.Redlock(nodes, fencing=1)  # C options by name
    except libredlock.ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    with rl:
        with rl.lock("invoice:42", ttl=10.0, wait=2.0) as lk:  # 10 s lock, wait up to 2 s
            if lk.valid(margin=0.5):
                print("holding invoice:42 with fence", lk.fence)
            try:  # a second owner is refused while we hold it
                libredlock.Redlock(nodes).acquire("invoice:42")
            except libredlock.Taken as e:
                votes = [n.vote for n in e.report.nodes]
                print("a second owner is refused:", votes.count("no"), "of", len(votes), "nodes said no")
            lk.extend(10.0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
