#!/usr/bin/env bash
# Test of bench/report.sh on the committed results: every plot is a PNG, the README block
# between the markers is replaced (once, not added again on a second run) with a row per
# scenario, and a results file that is missing is noted rather than fatal.
#
#   bench/tools/test_report.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp bench/README.md "$TMP/README.md"
for run in 1 2; do
    REPORT_PLOTS=$TMP/plots REPORT_README=$TMP/README.md bench/report.sh >"$TMP/out$run"
done
for p in throughput latency vpl-lag multi-flow-rss; do
    f=$TMP/plots/$p.png
    [ -s "$f" ] || fail "no $p.png"
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$p.png is not a PNG"
    grep -q "($p.png)\|/$p.png)" "$TMP/README.md" || fail "README does not show $p.png"
done
if [ -f bench/results/bus.json ]; then
    [ -s "$TMP/plots/bus.png" ] || fail "bus.json is there but no bus.png"
fi
[ "$(grep -c '<!-- report:begin -->' "$TMP/README.md")" = 1 ] || fail "markers repeated after two runs"
[ "$(grep -c '<!-- report:end -->' "$TMP/README.md")" = 1 ] || fail "end marker repeated"
block=$(sed -n '/<!-- report:begin -->/,/<!-- report:end -->/p' "$TMP/README.md")
for s in "ingest (HTTP" "flow hop" "detect unit" "MQTT round trip" "1 / 10 / 50 flows" "VPL engine alone"; do
    grep -qF "| $s" <<<"$block" || fail "no row for $s"
done
# The flow hop's ratio is computed from its JSON, not copied.
want=$(python3 -c 'import json; d=json.load(open("bench/results/flow-hop.json")); print("%.2f" % (d["flow_rate_median"]/d["relay_rate_median"]))')
grep -F "| flow hop" <<<"$block" | grep -qF "| $want |" || fail "flow hop ratio is not $want"
# Everything outside the block is unchanged.
diff <(sed '/<!-- report:begin -->/,/<!-- report:end -->/d' bench/README.md) \
     <(sed '/<!-- report:begin -->/,/<!-- report:end -->/d' "$TMP/README.md") >/dev/null ||
    fail "report.sh changed the README outside its block"
echo "ok: plots and README block"

# A missing file is a note, and the other figures still come out.
mkdir "$TMP/results"
cp bench/results/*.json "$TMP/results/"
rm "$TMP/results/flow-hop.json"
printf '{"scenario":"new-thing","rate_median":1234,"broker":{"ceiling":99}}\n' >"$TMP/results/new-thing.json"
REPORT_RESULTS=$TMP/results REPORT_PLOTS=$TMP/plots2 REPORT_README=$TMP/README.md bench/report.sh >"$TMP/out3"
grep -q 'results/flow-hop.json` is missing' "$TMP/README.md" || fail "missing flow-hop.json not noted"
grep -qF "| new-thing (read generically) | rate_median 1234, broker.ceiling 99" "$TMP/README.md" || fail "unknown file not read"
grep -qF "| detect unit" "$TMP/README.md" || fail "other rows lost"
[ -s "$TMP/plots2/throughput.png" ] || fail "no throughput plot without flow-hop.json"
echo "ok: a missing file is noted"
echo "report test passed"
