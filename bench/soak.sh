#!/usr/bin/env bash
# soak.sh [--minutes M=30] [--every S=60] [--rate R=200]: gust left alone under mixed load
# with a fault every S seconds (nats frozen, sink down, SIGHUP, a stuck flow, the store
# full). See soak.py. Prints JSON and writes bench/results/soak.json when nothing was lost.
BENCH_COMMAND="bench/soak.sh${*:+ $*}" exec python3 "$(dirname "$0")/soak.py" "$@"
