#!/usr/bin/env bash
# detect-failover.sh [--lag L] [--ttl S] [--rate R]: a detect unit's restore + replay at L
# open runs and its failover gaps (kill -9, clean stop). See detect-failover.py. Prints
# JSON and writes bench/results/detect-failover.json.
BENCH_COMMAND="bench/detect-failover.sh${*:+ $*}" exec python3 "$(dirname "$0")/detect-failover.py" "$@"
