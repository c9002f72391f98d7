#!/usr/bin/env bash
# Test of bench/report.sh on the committed results: every plot is a PNG; the README block
# between the markers is replaced (once, not added again on a second run) with the table
# of the latest figures (its columns, a row per scenario, the targets, the provenance or
# "not recorded"), and is what bench/README.md holds; every known results file is read by
# its reader; a results file that is missing, of a shape its reader does not expect, or of
# no known kind is noted rather than fatal; and every target the report states is written
# in bench/WORKLOAD.md.
#
#   bench/tools/test_report.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
block_of() { sed -n '/<!-- report:begin -->/,/<!-- report:end -->/p' "$1"; }

cp bench/README.md "$TMP/README.md"
for run in 1 2; do
    REPORT_PLOTS=$TMP/plots REPORT_README=$TMP/README.md bench/report.sh >"$TMP/out$run"
done
for p in throughput latency vpl-lag multi-flow-rss; do
    f=$TMP/plots/$p.png
    [ -s "$f" ] || fail "no $p.png"
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$p.png is not a PNG"
    grep -q "/$p.png)" "$TMP/README.md" || fail "README does not show $p.png"
done
if [ -f bench/results/bus.json ]; then
    [ -s "$TMP/plots/bus.png" ] || fail "bus.json is there but no bus.png"
fi
[ "$(grep -c '<!-- report:begin -->' "$TMP/README.md")" = 1 ] || fail "markers repeated after two runs"
[ "$(grep -c '<!-- report:end -->' "$TMP/README.md")" = 1 ] || fail "end marker repeated"
block=$(block_of "$TMP/README.md")
grep -qxF "| scenario | command | gust | baseline (same run) | ratio | target | commit | load (1 min, start → end) |" \
    <<<"$block" || fail "the table's header is not scenario, command, gust, baseline, ratio, target, commit, load"
for s in "ingest: HTTP" "cold start" "end to end, saturated" "end to end at 20 events/s" "flow hop" \
         "1 / 10 / 50 flows" "detect unit" "MQTT round trip" "MQTT QoS 0 ladder" "cluster: " \
         "VPL engine alone, orders" "VPL engine alone, sequence" "gust vs Node-RED" "the bus alone: "; do
    grep -qF "| $s" <<<"$block" || fail "no row for $s"
done
# Every row has its eight cells, a target, and says where it comes from.
echo "$block" >"$TMP/block.md"
python3 - "$TMP/block.md" <<'PY' || exit 1
import sys
rows = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("| ") and not l.startswith("| scenario")]
for r in rows:
    cells = [c.strip() for c in r.replace("\\|", "").strip("|").split("|")]
    if len(cells) != 8:
        sys.exit("FAIL: %d cells in %s" % (len(cells), r))
    if not cells[5] or (cells[5] == "—" and "(read generically)" not in cells[0]):
        sys.exit("FAIL: no target in %s" % r)
    if not cells[6] or not cells[7]:
        sys.exit("FAIL: no commit or load in %s" % r)
PY
# The flow hop's ratio is computed from its JSON, not copied.
want=$(python3 -c 'import json; d=json.load(open("bench/results/flow-hop.json")); print("%.2f" % (d["flow_rate_median"]/d["relay_rate_median"]))')
grep -F "| flow hop" <<<"$block" | grep -qF "| $want |" || fail "flow hop ratio is not $want"
# Every committed file is read by its own reader, and one without the provenance fields
# says so instead of showing anything.
grep -q "does not have the shape" <<<"$block" && fail "a committed results file defeats its reader: $(grep 'shape' <<<"$block")"
for f in bench/results/*.json; do
    python3 -c 'import json,sys; sys.exit(0 if "commit" in json.load(open(sys.argv[1])) else 1)' "$f" && continue
    n=$(basename "$f")
    grep -qF "\`results/$n\`" <<<"$block" || fail "$n has no provenance and is not listed to be run afresh"
done
# Everything outside the block is unchanged.
diff <(sed '/<!-- report:begin -->/,/<!-- report:end -->/d' bench/README.md) \
     <(sed '/<!-- report:begin -->/,/<!-- report:end -->/d' "$TMP/README.md") >/dev/null ||
    fail "report.sh changed the README outside its block"
# bench/README.md holds the table of the committed results (the plots' paths aside).
diff <(block_of bench/README.md | grep -v '^!\[') <(grep -v '^!\[' <<<"$block") >"$TMP/stale" ||
    fail "bench/README.md's table is not what bench/report.sh writes from the committed results: run it
$(head -20 "$TMP/stale")"
echo "ok: plots and README block"

# Every target of the table is the one bench/WORKLOAD.md states.
python3 - <<'PY' || exit 1
import ast, sys
tree = ast.parse(open("bench/report.py").read())
targets = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TARGETS")
workload = open("bench/WORKLOAD.md").read()
texts = [v.elts[0].value for v in targets.values]
missing = [t for t in texts if t not in workload]
if missing:
    sys.exit("FAIL: targets of bench/report.py not in bench/WORKLOAD.md: %s" % missing)
print("ok: %d targets, all in bench/WORKLOAD.md" % len(texts))
PY

# A missing file is a note, a known file of another shape is shown generically with a
# note, an unknown file is read generically, and a file with its provenance shows it.
mkdir "$TMP/results"
cp bench/results/*.json "$TMP/results/"
rm "$TMP/results/flow-hop.json"
printf '{"scenario":"new-thing","rate_median":1234,"broker":{"ceiling":99}}\n' >"$TMP/results/new-thing.json"
printf '{"scenario":"cluster","rate":5}\n' >"$TMP/results/cluster.json"
python3 - "$TMP/results" <<'PY'
import glob, json, os, sys
# Every file as one without provenance, but detect.json, which gets a made-up one.
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    d = json.load(open(path))
    for k in ("commit", "cpu_model", "cores", "build_type", "date", "uptime"):
        d.pop(k, None)
    json.dump(d, open(path, "w"))
path = os.path.join(sys.argv[1], "detect.json")
d = json.load(open(path))
d.update(commit="abc1234-dirty", cpu_model="Test CPU 9000", cores=7, build_type="Release",
         date="2030-01-02T03:04:05Z", uptime={"start": [1.5, 1.0, 0.5], "end": [2.25, 1.0, 0.5]})
json.dump(d, open(path, "w"))
PY
REPORT_RESULTS=$TMP/results REPORT_PLOTS=$TMP/plots2 REPORT_README=$TMP/README.md bench/report.sh >"$TMP/out3"
block=$(block_of "$TMP/README.md")
grep -q 'results/flow-hop.json` is missing' <<<"$block" || fail "missing flow-hop.json not noted"
grep -qF "| new-thing (read generically) | — | rate_median 1234, broker.ceiling 99 |" <<<"$block" ||
    fail "unknown file not read"
grep -q 'results/cluster.json` does not have the shape' <<<"$block" || fail "a cluster.json of another shape not noted"
grep -qF "| cluster (read generically) | — | rate 5 |" <<<"$block" || fail "a cluster.json of another shape not shown"
grep -F "| detect unit" <<<"$block" | grep -qF "| abc1234-dirty | 1.5 → 2.25 |" || fail "detect's provenance not shown"
grep -qF "(1 of $(ls "$TMP"/results/*.json | wc -l) files): CPU Test CPU 9000; 7 cores; build Release; 2030-01-02T03:04:05Z" <<<"$block" ||
    fail "the provenance summary is wrong: $(grep 'record where' <<<"$block")"
grep "Still to be run afresh" <<<"$block" | grep -qF 'results/detect.json' && fail "detect.json listed as not recorded"
grep -F "| ingest: HTTP" <<<"$block" | grep -qF "| not recorded | not recorded |" || fail "ingest's missing provenance not said"
[ -s "$TMP/plots2/throughput.png" ] || fail "no throughput plot without flow-hop.json"
echo "ok: missing, reshaped, unknown and recorded files"
echo "report test passed"
