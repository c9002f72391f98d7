#!/bin/sh
# Builds the libFuzzer targets of host/bus (clang, ASan + UBSan) into a temp dir and runs
# each for SECONDS at most (default 10), seeded with what a server or a user sends: the
# PubAck parser against yajl (fuzz_puback.c), the bus URLs (fuzz_nats_url.c), NKey seeds
# and credentials files (fuzz_nkeys.c). Seed and runs are fixed (FUZZ_SEED, FUZZ_RUNS) so
# a CI run is repeatable; longer exploration: FUZZ_RUNS=-1 fuzz_bus.sh 600.
# usage: tests/unit/bus/fuzz_bus.sh [SECONDS]
set -eu
secs=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
bus=$(cd "$here/../../../host/bus" && pwd)
include=$(cd "$here/../../../host/include" && pwd)
common=$(cd "$here/../../../host/common" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CC=${CC:-clang}
flags="-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$include -I$bus"

$CC $flags "$here/fuzz_puback.c" "$bus/puback.c" $(pkg-config --cflags --libs yajl) -o "$work/fuzz_puback"
$CC $flags "$here/fuzz_nats_url.c" "$bus/nats_url.c" -o "$work/fuzz_nats_url"
$CC $flags "$here/fuzz_nkeys.c" "$bus/nkeys.c" "$common/err.c" $(pkg-config --cflags --libs yajl libcrypto) \
    -o "$work/fuzz_nkeys"

seed() { mkdir -p "$work/corpus_$1"; printf "$3" >"$work/corpus_$1/$2"; }
seed puback ok '{"stream":"GUST","seq":12}'
seed puback dup '{"stream":"GUST","domain":"hub","seq":18446744073709551615,"duplicate":true}'
seed puback err '{"error":{"code":503,"err_code":10077,"description":"maximum \\"messages\\" exceeded \\u00e9"}}'
seed puback bad '{"seq":-3,"stream":"GUST","x":[1,2.5e3,null,{"a":"b"}]}'
seed nats_url plain 'nats://127.0.0.1:4222'
seed nats_url creds 'tls://user:p%%40ss@[::1]:4443/path'
seed nats_url token 'nats://s3cret@nats.example.com'
seed nkeys seed '\001SUADHBFNARALUBNMNLSQCMM3G52C2VF7RA2LFZRE3CYX2WAGKBIG2EWDOM'
seed nkeys creds '\000-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJleHAiOjEsInN1YiI6IlVBIiwibmF0cyI6eyJ0eXBlIjoidXNlciJ9fQ.c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUADHBFNARALUBNMNLSQCMM3G52C2VF7RA2LFZRE3CYX2WAGKBIG2EWDOM\n------END USER NKEY SEED------\n'

for t in puback nats_url nkeys; do
    "$work/fuzz_$t" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-2000000}" \
        -max_len=4096 -timeout=10 -print_final_stats=0 -artifact_prefix="$work/crash-$t-" "$work/corpus_$t" \
        >"$work/fuzz_$t.log" 2>&1 || {
        echo "fuzz_$t FAILED:"
        tail -n 60 "$work/fuzz_$t.log"
        for c in "$work"/crash-$t-*; do [ -f "$c" ] && od -c "$c" | head -40; done
        exit 1
    }
    echo "fuzz_$t: $(grep -E "Done [0-9]+ runs" "$work/fuzz_$t.log" | tail -n 1 || echo done)"
done
