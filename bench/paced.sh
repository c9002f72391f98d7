#!/usr/bin/env bash
# paced.sh RATE SECS: the end-to-end path of run.sh at a fixed rate below saturation;
# reports the latency percentiles measured by the sink from each event's t. Writes
# bench/results/paced-RATE.json.
RATE=${1:-20} SCENARIO=e2e-paced BENCH_COMMAND="bench/paced.sh ${1:-20} ${2:-10}" exec "$(dirname "$0")/run.sh" "${2:-10}" 8
