#!/usr/bin/env bash
# vpl-engine.sh [ARGS...]: the VPL engine alone, in memory (bench/vpl-engine.c): the
# orders program, the sequence program against the number of runs open at once (LAG 1 ..
# 100000; with the bench/WORKLOAD.md generator and, with --distinct, with a host per open
# run), the sequence without .partition_by at LAG 1, 100, 1000, a windowed join
# (bench/vpl_join.vpl) and a program calling a fn block (bench/vpl_fn.vpl), each
# checked against the alerts its generator implies first. Builds nothing; prints
# the JSON of build/bench/gust-bench-vpl and writes it to bench/results/vpl-engine.json
# when its checks pass (with extra arguments that narrow the run, set RESULT= or
# RESULT=file so that a partial run does not replace the full one). Extra arguments go to
# it (see its header), e.g.
#   RESULT= bench/vpl-engine.sh --reps 5 --pairs 400000
source "$(dirname "$0")/lib.sh"
BIN=$TOOLS/gust-bench-vpl
[ -x "$BIN" ] || { echo "missing $BIN: build first (cmake --build build)" >&2; exit 1; }
status=ok
out=$("$BIN" --rules "$ROOT/rules" --reps 3 --orders 200000 --pairs 200000 \
    --lags 1,100,1000,10000,30000,100000 --distinct \
    --nopart-lags 1,100,1000 --nopart-pairs 50000 "$@") || status=failed
emit_result vpl-engine "$status" <<<"$out"
[ "$status" = ok ]
