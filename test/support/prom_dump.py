#!/usr/bin/python3
"""prom_dump.py -- parses Prometheus text exposition from stdin with the
official client's parser (Debian's python3-prometheus-client) and prints
one line per family and per sample, for the C tests to compare:

    family NAME TYPE
    sample NAME LABEL=VALUE,LABEL=VALUE VALUE

labels sorted by name ('-' when there are none), values with repr-exact
precision ('%.17g'). Exits 1 (parser's message on stderr) when the text
does not parse."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends
        print("prom_dump: parse error: %r" % (e,), file=sys.stderr)
        return 1
    for f in families:
        print("family %s %s" % (f.name, f.type))
        for s in f.samples:
            labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items())) or "-"
            print("sample %s %s %.17g" % (s.name, labels, s.value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
