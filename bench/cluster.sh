#!/usr/bin/env bash
# cluster.sh [INSTANCES...] [-n N]: several gust processes on one nats-server: shared
# work with a kill -9, a singleton timer, lease handoff and failover. See cluster.py.
# Prints JSON and writes bench/results/cluster.json.
set -euo pipefail
cd "$(dirname "$0")"
python3 cluster.py "$@" | tee results/cluster.json
