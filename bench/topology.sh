#!/usr/bin/env bash
# topology.sh [-n N]: GET /topology at 50 units against GET /livez. See topology.py.
# Prints JSON and writes bench/results/topology.json.
BENCH_COMMAND="bench/topology.sh${*:+ $*}" exec python3 "$(dirname "$0")/topology.py" "$@"
