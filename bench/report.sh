#!/usr/bin/env bash
# report.sh: the table of the latest figures and the plots, from what the benchmarks last
# wrote to bench/results/ (see bench/report.py): draws PNG plots with gnuplot into
# bench/plots/ and writes the table (scenario, command, gust, baseline, ratio, target,
# commit, load) between the markers
#   <!-- report:begin --> ... <!-- report:end -->
# in bench/README.md. A missing results file is noted in the table, not an error; so is
# a file whose format it does not know (it then reads its numbers generically). Runs
# nothing but gnuplot: it reports what the benchmark scripts measured.
#
# REPORT_RESULTS=dir, REPORT_PLOTS=dir, REPORT_README=file override the three places.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RESULTS=${REPORT_RESULTS:-$BENCH_DIR/results}
PLOTS=${REPORT_PLOTS:-$BENCH_DIR/plots}
README=${REPORT_README:-$BENCH_DIR/README.md}
command -v gnuplot >/dev/null || { echo "report.sh: gnuplot is not installed (./build.sh deps)" >&2; exit 1; }
mkdir -p "$PLOTS"
WORK=$(mktemp -d /tmp/gust-report.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
python3 "$BENCH_DIR/report.py" "$RESULTS" "$PLOTS" "$README" "$WORK"
