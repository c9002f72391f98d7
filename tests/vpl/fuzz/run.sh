#!/bin/sh
# Builds the VPL fuzz targets with clang (libFuzzer + ASan + UBSan) into a temp dir and
# runs each for SECONDS at most (default 20), seeded with the cases of tests/vpl/cases:
# the parser, the engine on event lines, and the event decoder against the yajl-based
# decoder it replaced (fuzz_decoder_diff.c, ref_decoder.c).
# The seed and the number of runs are fixed (FUZZ_SEED, FUZZ_RUNS) so that a CI run is
# repeatable: what passes here passes there. Longer exploration: FUZZ_RUNS=-1 run.sh 600.
# And snapshots: restored against the engine they were taken from, and damaged
# (fuzz_restore.c).
# usage: tests/vpl/fuzz/run.sh [SECONDS] [KEEP_DIR]
set -eu
secs=${1:-20}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../../host/vpl" && pwd)
cases="$here/../cases"
work=${2:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${2:-}" ] || trap 'rm -rf "$work"' EXIT

CC=${CC:-clang}
flags="-g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$src"
lib="util.c hmap.c heap.c symtab.c rfc3339.c value.c json.c lexer.c parser.c check.c
     compile.c fold.c keep.c eval.c builtins.c runtime/engine.c runtime/ptab.c runtime/seq.c runtime/window.c runtime/join.c runtime/snapshot.c runtime/timer.c"
objs=""
for f in $lib; do
    o="$work/$(echo "$f" | tr / _).o"
    $CC $flags -c "$src/$f" -o "$o"
    objs="$objs $o"
done

mkdir -p "$work/corpus_parser" "$work/corpus_event"
for c in "$cases"/*/; do
    n=$(basename "$c")
    [ -f "$c/program.vpl" ] && cp "$c/program.vpl" "$work/corpus_parser/$n.vpl"
    [ -f "$c/events.jsonl" ] && cp "$c/events.jsonl" "$work/corpus_event/$n.jsonl"
done
cp "$here"/../errors/*.vpl "$work/corpus_parser/" 2>/dev/null || true

# Snapshots: the event seeds, and the same with damage after a NUL (fix the checksum,
# flip a few bytes; truncate).
mkdir -p "$work/corpus_restore"
for f in "$work"/corpus_event/*; do
    n=$(basename "$f")
    cp "$f" "$work/corpus_restore/$n"
    { cat "$f"; printf '\000\001\000\040\377\000\100\001'; } >"$work/corpus_restore/$n.flip"
    { cat "$f"; printf '\000\003\000\060'; } >"$work/corpus_restore/$n.cut"
done

status=0
# The decoder against the yajl-based one it replaced: one event line per seed.
mkdir -p "$work/corpus_decoder_diff"
cat "$work"/corpus_event/* | awk -v d="$work/corpus_decoder_diff" \
    '{ f = d "/l" NR; printf "%s", $0 > f; close(f) }'
for t in parser event decoder_diff restore; do
    extra=""
    [ "$t" = decoder_diff ] && extra="$here/ref_decoder.c $here/../../../host/common/json_text.c"
    $CC $flags "$here/fuzz_$t.c" $extra $objs -lyajl -lm -o "$work/fuzz_$t"
    echo "fuzz_$t: ${secs}s"
    if ! "$work/fuzz_$t" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-100000}" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=0 -artifact_prefix="$work/crash_$t-" "$work/corpus_$t" \
            >"$work/fuzz_$t.log" 2>&1; then
        echo "fuzz_$t FAILED:"
        tail -n 60 "$work/fuzz_$t.log"
        ls "$work"/crash_"$t"-* 2>/dev/null || true
        status=1
    else
        grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$work/fuzz_$t.log" | tail -n 1 || true
    fi
done
exit $status
