#!/usr/bin/env bash
# The Debian packages end to end, as root on a Debian 12 machine, once per `./build.sh
# test` (it changes the system: it installs the packages, and purges them at the end):
#   build them (./build.sh deb, lintian included), dpkg -i them, gust -t on the packaged
#   /etc/gust/host.conf, run the installed gust as the gust user with that config
#   (embedded nats-server, state in /var/lib/gust), ingest an event and read it back from
#   the stream, build the example plugin against the installed SDK with pkg-config and
#   load it into the installed gust, systemd-analyze verify the unit, then apt-get purge
#   and check that no file of the packages is left.
# Usage: tests/packaging/test_deb.sh BUILD_DIR (a normal build, for gust-stream-read)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(realpath "${1:-build}")
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@" >/dev/null; then ok; else fail "$what"; fi; }

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
    echo "test_deb: needs root on Debian (it installs packages); skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
if ss -ltn 2>/dev/null | grep -q '127.0.0.1:8787 '; then
    echo "FAIL: 127.0.0.1:8787 is in use: the packaged config listens there"
    echo "0 passed, 1 failed"
    exit 1
fi

TMP=$(mktemp -d /tmp/gust-deb-test.XXXXXX)
chmod 0755 "$TMP"
GUST_PID=
cleanup() {
    [ -n "$GUST_PID" ] && kill "$GUST_PID" 2>/dev/null && wait "$GUST_PID" 2>/dev/null || true
    if dpkg-query -W -f='${Status}' gust 2>/dev/null | grep -q 'ok installed'; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq gust gust-dev >/dev/null 2>&1 || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
# A previous run that died midway may have left them installed.
cleanup >/dev/null 2>&1 || true
TMP=$(mktemp -d /tmp/gust-deb-test.XXXXXX)
chmod 0755 "$TMP"

# Build (lintian runs inside, and fails the build on an error).
./build.sh deb > "$TMP/deb.log" 2>&1 || { cat "$TMP/deb.log"; fail "./build.sh deb"; echo "$passed passed, $failed failed"; exit 1; }
ok
grep -E '^(E|W): ' "$TMP/deb.log" || true
debs=(build-deb/gust_*.deb build-deb/gust-dev_*.deb)

# Install: dpkg -i, then apt-get for any dependency still missing.
export DEBIAN_FRONTEND=noninteractive
if ! dpkg -i "${debs[@]}" > "$TMP/dpkg.log" 2>&1; then
    apt-get install -f -y -qq >> "$TMP/dpkg.log" 2>&1 || true
fi
if [ "$(dpkg-query -W -f='${Status} ' gust gust-dev 2>/dev/null)" != "install ok installed install ok installed " ]; then
    cat "$TMP/dpkg.log"
    fail "both packages installed"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok
check "the gust user exists" getent passwd gust
check "/var/lib/gust belongs to gust" test "$(stat -c %U /var/lib/gust)" = gust
check "host.conf is a conffile" grep -q '^ /etc/gust/host.conf ' <(dpkg-query -W -f='${Conffiles}\n' gust)
check "Recommends nats-server" grep -q nats-server <(dpkg-query -W -f='${Recommends}' gust)
check "Depends on the runtime libraries" grep -q libnats <(dpkg-query -W -f='${Depends}' gust)
dpkg -L gust gust-dev | sort -u > "$TMP/files"
check "gust -t on the packaged config" /usr/sbin/gust -t -c /etc/gust/host.conf
if command -v systemd-analyze >/dev/null; then
    check "systemd-analyze verify gust.service" systemd-analyze verify /lib/systemd/system/gust.service
fi
check "man gust-host.conf" sh -c 'man -w gust-host.conf | grep -q gust-host.conf.5'
check "the VPL reference gust(8) names" test -f /usr/share/doc/gust/VPL.md.gz
check "gust-host.conf(5) lists the installed gust's keys" \
    python3 tests/packaging/test_manpage.py /usr/sbin/gust <(zcat /usr/share/man/man5/gust-host.conf.5.gz)

# The installed gust, as the gust user, with the packaged config: embedded NATS, state in
# /var/lib/gust.
(cd /var/lib/gust && exec runuser -u gust -- /usr/sbin/gust -c /etc/gust/host.conf) > "$TMP/gust.log" 2>&1 &
GUST_PID=$!
for _ in $(seq 200); do
    curl -sf localhost:8787/healthz >/dev/null 2>&1 && break
    kill -0 "$GUST_PID" 2>/dev/null || break
    sleep 0.1
done
check "the installed gust answers /healthz" curl -sf localhost:8787/healthz
resp=$(curl -s -d '{"from":"the package"}' localhost:8787/ingest/pkg)
check "ingest answers 202 with a seq ($resp)" grep -q '"subject":"ev.pkg","seq":' <<< "$resp"
url=$(grep -o 'embedded nats-server pid [0-9]* on nats://127.0.0.1:[0-9]*' "$TMP/gust.log" | grep -o 'nats://.*' || true)
check "the embedded nats-server ran ($url)" test -n "$url"
check "its store is in /var/lib/gust, owned by gust" test "$(stat -c %U /var/lib/gust/nats)" = gust
if [ -n "$url" ]; then
    check "the event read back from the stream" grep -q '{"from":"the package"}' <("$BUILD/tests/gust-stream-read" "$url" GUST)
fi
pid=$(pgrep -P "$GUST_PID" -x gust || true) # runuser's child
check "the process runs as gust" test "$(ps -o user= -p "${pid:-0}" | tr -d ' ')" = gust
stop_gust() { # SIGTERM to gust itself; runuser passes its exit status on
    kill -TERM "$(pgrep -P "$GUST_PID" -x gust)"
    wait "$GUST_PID" && ok || fail "clean stop (log: $(tail -3 "$1"))"
    GUST_PID=
}
stop_gust "$TMP/gust.log"

# The example plugin, built against the installed SDK and loaded by the installed gust.
cp -r /usr/share/doc/gust-dev/examples/plugin "$TMP/example"
check "the example builds with pkg-config only" make -s -C "$TMP/example"
plugindir=$(pkg-config --variable=plugindir gust-plugin)
check "the plugin dir is the installed one ($plugindir)" test -f "$plugindir/http_out.so"
install -m 0644 "$TMP/example/example.so" "$plugindir/example.so"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$TMP/state" && chown gust:gust "$TMP/state" "$TMP"
cat > "$TMP/host.conf" <<CONF
state_dir $TMP/state;
http { listen 127.0.0.1:$port; }
plugin example;
source count { use counter; subject ev.count; interval 20ms; }
sink log { use file_out; source ev.count; path $TMP/state/count.jsonl; }
CONF
check "gust -t with the example plugin" /usr/sbin/gust -t -c "$TMP/host.conf"
(cd "$TMP/state" && exec runuser -u gust -- /usr/sbin/gust -c "$TMP/host.conf") > "$TMP/gust2.log" 2>&1 &
GUST_PID=$!
for _ in $(seq 300); do
    [ -f "$TMP/state/count.jsonl" ] && [ "$(wc -l < "$TMP/state/count.jsonl")" -ge 3 ] && break
    kill -0 "$GUST_PID" 2>/dev/null || break
    sleep 0.1
done
check "the example's source and sink ran" grep -q '"subject":"ev.count","seq":1,"event":{"n":1}}' "$TMP/state/count.jsonl"
stop_gust "$TMP/gust2.log"
rm -f "$plugindir/example.so"

# Purge: nothing of the packages is left.
apt-get purge -y -qq gust gust-dev > "$TMP/purge.log" 2>&1 && ok || fail "apt-get purge: $(cat "$TMP/purge.log")"
left=$(while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done < "$TMP/files" || true)
check "no file of the packages is left: $left" test -z "$left"
for d in /etc/gust /var/lib/gust "$plugindir" /usr/include/gust /usr/share/doc/gust-dev; do
    check "$d is gone" test ! -e "$d"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
