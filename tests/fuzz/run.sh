#!/bin/sh
# Builds one libFuzzer target of tests/fuzz with clang (libFuzzer + ASan + UBSan) into a
# temp dir and runs it for SECONDS at most (default 10), seeded with a few inputs. The
# seed and the number of runs are fixed (FUZZ_SEED, FUZZ_RUNS) so that a CI run is
# repeatable: what passes here passes there. Longer exploration:
#   FUZZ_RUNS=-1 tests/fuzz/run.sh mqtt_session 600
# usage: tests/fuzz/run.sh TARGET [SECONDS] [KEEP_DIR]
#   TARGET: ingest flow_json dlq_query proxy origin mqtt_session exec_lines http_poll flow_state pattern form
set -eu
name=$1
secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work/corpus"
[ -n "${3:-}" ] || trap 'rm -rf "$work"' EXIT

h=$root/host
# the flow runtime: every file but the CLI's main; and the host/common files it uses
flow="$(ls "$h"/flow/*.c | grep -v test_flow_main.c)"
common=$(sed -e '/^#/d' -e "s|^|$h/|" "$h/flow/common_sources.txt" | tr '\n' ' ')
inc="-I$h/include -I$here"
libs=""
seed() { printf "$2" >"$work/corpus/$1"; }
case $name in
ingest)
    src="$h/http/json_check.c $h/http/ingest_subject.c $h/http/auth.c $h/conf/subject.c $flow $common"
    inc="$inc -I$h/flow -I$root/tests/unit/flow"
    libs="$(pkg-config --libs luajit yajl libcrypto) -lm"
    inc="$inc $(pkg-config --cflags luajit)"
    seed body '\000{"a": [1, 2.5, "x\\u00e9", {"b": null}], "c": true}'
    seed bad '\000{"v":[\f], "s": "\355\240\200"}'
    seed subject '\001orders.eu%2Fx.y'
    seed auth '\002Bearer   s3cret-T0ken  '
    ;;
flow_json)
    src="$h/http/json_check.c $flow $common"
    inc="$inc -I$h/flow -I$root/tests/unit/flow $(pkg-config --cflags luajit)"
    libs="$(pkg-config --libs luajit yajl) -lm"
    seed nums '{"a": -0, "b": 1e-400, "c": 12345678901234567890, "d": 70.7, "e": [5e-324, -1e400]}'
    seed strings '{"s": "\\ud800abc\\udc00\\ud83d\\ude00 \\u0000 \\\\ \\"", "k\\u00e9": {}}'
    seed deep '{"a":[[[[[[[[[[{"b":[]}]]]]]]]]]]}'
    ;;
dlq_query)
    src="$h/http/dlq_query.c $h/http/query.c $h/conf/subject.c $h/common/err.c"
    libs="$(pkg-config --libs yajl)"
    seed query '\025unit=orders&limit=10{"seq": 3}'
    seed body '\000{"unit": "crm", "all": true, "limit": 5}'
    seed nul '\017unit=a%00b&seq=1'
    ;;
proxy)
    src="$h/http/proxy.c $h/common/err.c"
    inc="$inc -DH2O_USE_LIBUV=0 $(pkg-config --cflags libh2o-evloop)"
    libs="$(pkg-config --libs libh2o-evloop openssl)"
    seed v4 '127.0.0.1\n10.0.0.0/8\000203.0.113.9, 10.1.2.3 , 127.0.0.1'
    seed v6 '::1\nfe80::/10\0002001:db8::1,fe80::1'
    ;;
origin)
    src="$h/http/origin.c $h/common/err.c"
    seed host '127.0.0.1:8787\000http://127.0.0.1:8787'
    seed v6 '[2001:db8::1]:443\000https://[2001:db8::1]'
    seed bad 'a.b:99999\000null'
    ;;
mqtt_session)
    m=$root/plugins/mqtt
    src="$here/stub_sock.c $m/mqtt_link.c $m/mqtt_in_conn.c $m/mqtt_in_ring.c $m/mqtt_wire.c $m/mqtt_props.c $m/mqtt_payload.c
         $m/mqtt_subject.c $h/common/json_fields.c $m/mqtt_conf.c $h/common/source.c $common"
    inc="$inc -I$m"
    libs="-lpthread"
    # settings, then CONNACK, SUBACK (QoS 1, 0), a QoS 1 PUBLISH, a QoS 2 one and its PUBREL, a PINGRESP
    seed session '\011\040\003\040\002\000\000\220\004\000\001\001\000\062\015\000\003a/b\000\007{"x":1}\064\010\000\001b\000\010{}\142\002\000\010\320\000'
    seed oversized '\011\000\001\040\002\000\000\220\004\000\001\001\001\062\377\377\003\000\003a/b\000\011xxxxxxxxxxxxxxxx'
    seed garbage '\000\001\000\040\002\000\000\060\377\377\377\377\177'
    # 5.0: CONNACK with Server Keep Alive, SUBACK with a reason string, a QoS 1 PUBLISH with
    # user properties (traceparent, x-a), a PUBREL with a reason code, a DISCONNECT
    seed v5 '\011\040\013\040\006\000\000\003\023\000\012\220\011\000\001\004\037\000\001r\001\000\062\044\000\003a/b\000\007\032\046\000\013traceparent\000\0010\046\000\003x-a\000\001v{}\142\003\000\010\222\340\002\213\000'
    ;;
exec_lines)
    src="$root/plugins/exec/exec_lines.c $h/common/json_text.c $h/common/json_check.c"
    inc="$inc -I$root/plugins/exec"
    libs="$(pkg-config --libs yajl)"
    seed lines '\010\003{"a":1}\nnot json\n\n{"b":"\\u00e9"}\n0123456789012345678\nlast'
    seed long '\202\007a very long line with no newline at all, longer than anything'
    ;;
http_poll)
    src="$h/common/json_check.c $h/common/json_text.c"
    libs="$(pkg-config --libs yajl)"
    seed array ' [ {"a":1} , "s\\"]" , [1,[2]], null ]\n'
    seed object '{"prices": [1.5, 2], "at": "2026-01-01"}'
    ;;
flow_state)
    src="$flow $common"
    inc="$inc -I$h/flow -I$h/unit $(pkg-config --cflags luajit)"
    libs="$(pkg-config --libs luajit yajl) -lm"
    seed env '{"v":{"n":12345678901234567890,"s":"a\\u0000b"},"x":1764400000000,"a":[[1,5],[9,9]]}\000{"v":null,"x":0,"a":[[3,12],[14,20]]}'
    seed bad '{"v":1,"a":[[5,1]]}\000{"x":1}'
    ;;
pattern)
    src="$flow $common"
    inc="$inc -I$h/flow -I$root/tests/unit/flow $(pkg-config --cflags luajit)"
    libs="$(pkg-config --libs luajit yajl) -lm"
    seed captures '\001\000\013\013k1=v1 k2=v2(%%w+)=(%%w+)'
    seed gsub '\003\201\005\010hello(l)()%%b()<%%1%%2>'
    seed frontier '\002\000\010\010THE (ok)%%f[%%a]%%a+f'
    seed anchor '\003\000\003\003abc^a.t'
    ;;
form)
    src="$h/http/form.c $h/common/json_check.c $common"
    libs="$(pkg-config --libs yajl)"
    seed pairs 'a=1&b=x+y&a=%%41%%zz&&c&=d'
    seed utf8 'e=caf%%C3%%A9&bad=%%C0%%AF'
    seed payload 'payload=%%7B%%22a%%22%%3A%%5B1%%5D%%7D'
    ;;
*)
    echo "unknown target $name" >&2
    exit 2
    ;;
esac

CC=${CC:-clang}
# shellcheck disable=SC2086
$CC -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    $inc "$here/fuzz_$name.c" $src $libs -o "$work/fuzz_$name"
echo "fuzz_$name: ${secs}s"
if ! "$work/fuzz_$name" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-200000}" -max_len=4096 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 -artifact_prefix="$work/crash-" "$work/corpus" \
        >"$work/fuzz.log" 2>&1; then
    echo "fuzz_$name FAILED:"
    tail -n 60 "$work/fuzz.log"
    for c in "$work"/crash-*; do [ -f "$c" ] && od -c "$c" | head -40; done
    exit 1
fi
grep -E "Done [0-9]+ runs" "$work/fuzz.log" | tail -n 1 || true
