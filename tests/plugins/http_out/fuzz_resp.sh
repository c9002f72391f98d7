#!/bin/sh
# Builds fuzz_resp.c (http_out's response reader) with clang (libFuzzer + ASan + UBSan)
# into a temp dir and runs it for SECONDS at most (default 15), seeded with a few answers
# (plain, chunked with a trailer, pipelined, HTTP/1.0, interim 100, malformed). Seed and
# runs are fixed (FUZZ_SEED, FUZZ_RUNS) so a CI run is repeatable; longer exploration:
# FUZZ_RUNS=-1 fuzz_resp.sh 600.
# usage: tests/plugins/http_out/fuzz_resp.sh [SECONDS]
set -eu
secs=${1:-15}
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(cd "$here/../../../plugins/http_out" && pwd)
include=$(cd "$here/../../../host/include" && pwd)
common=$(cd "$here/../../../host/common" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

${CC:-clang} -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$plugin" -I"$include" -I"$common" "$here/fuzz_resp.c" "$plugin/http_out_resp.c" "$common/buf.c" -o "$work/fuzz_resp"

mkdir -p "$work/corpus"
seed() { printf "$2" >"$work/corpus/$1"; }
seed plain '\003HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'
seed pipelined '\007HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: keep-alive\r\n\r\nnot foundHTTP/1.1 503 x\r\nContent-Length: 0\r\n\r\n'
seed chunked '\001HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n'
seed http10 '\011HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody to the close'
seed interim '\002HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nconnection: close\r\ncontent-length: 1\r\n\r\nx'
seed malformed '\004HTTP/1.1 2xx Nope\r\n\r\n'

"$work/fuzz_resp" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-200000}" \
    -max_len=4096 -timeout=10 -print_final_stats=0 -artifact_prefix="$work/crash-" "$work/corpus" \
    >"$work/fuzz.log" 2>&1 || {
    echo "fuzz_resp FAILED:"
    tail -n 60 "$work/fuzz.log"
    for c in "$work"/crash-*; do [ -f "$c" ] && od -c "$c" | head -40; done
    exit 1
}
grep -E "Done [0-9]+ runs" "$work/fuzz.log" | tail -n 1 || true
