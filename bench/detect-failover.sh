#!/usr/bin/env bash
# detect-failover.sh [--lag L] [--ttl S] [--rate R]: a detect unit's restore + replay at L
# open runs and its failover gaps (kill -9, clean stop). See detect-failover.py. Prints
# JSON and writes bench/results/detect-failover.json.
set -euo pipefail
cd "$(dirname "$0")"
python3 detect-failover.py "$@" | tee results/detect-failover.json
