#!/bin/sh
# Builds the lookup-table fuzz target with clang (libFuzzer + ASan + UBSan) into a temp
# dir and runs it for SECONDS at most (default 20), seeded with seeds/ (the first byte
# of each picks the format: see fuzz_tables.c). The seed and the number of runs are
# fixed (FUZZ_SEED, FUZZ_RUNS) so that a CI run is repeatable; longer exploration:
# FUZZ_RUNS=-1 run.sh 600.
# usage: tests/unit/flow/fuzz/run.sh [SECONDS] [KEEP_DIR]
set -eu
secs=${1:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work/corpus"
[ -n "${2:-}" ] || trap 'rm -rf "$work"' EXIT

CC=${CC:-clang}
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I$root/host/include -I$root/host/flow"
cp "$here"/seeds/* "$work/corpus/"
$CC $flags "$here/fuzz_tables.c" "$root/host/flow/csv.c" "$root/host/flow/jtree.c" "$root/host/flow/keyidx.c" \
    "$root/host/common/buf.c" "$root/host/common/err.c" "$root/host/common/json_out.c" -lyajl -o "$work/fuzz_tables"
echo "fuzz_tables: ${secs}s"
if ! "$work/fuzz_tables" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-1000000}" \
        -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
        -artifact_prefix="$work/crash-" "$work/corpus" >"$work/fuzz_tables.log" 2>&1; then
    echo "fuzz_tables FAILED:"
    tail -n 60 "$work/fuzz_tables.log"
    ls "$work"/crash-* 2>/dev/null || true
    exit 1
fi
grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$work/fuzz_tables.log" | tail -n 1 || true
