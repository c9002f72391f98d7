#!/usr/bin/env bash
# cluster.sh [INSTANCES...] [-n N]: several gust processes on one nats-server: shared
# work with a kill -9, a singleton timer, lease handoff and failover. See cluster.py.
# Prints JSON and writes bench/results/cluster.json.
BENCH_COMMAND="bench/cluster.sh${*:+ $*}" exec python3 "$(dirname "$0")/cluster.py" "$@"
