"""The golden-test runner on cases that are broken or wrong: each must FAIL with a
message naming the problem, the run goes on to the next, and the exit status is 1
(never a crash). usage: check_runner.py RUNNER SCRIPT RUNNER_DIR"""
import os
import re
import subprocess
import sys

runner, script, here = sys.argv[1:4]
names = ["not_json", "not_object", "unknown_key", "missing", "int_vs_float", "nul", "nul_exact", "reply_missing"]
cases = [os.path.join(here, n + ".json") for n in names]
p = subprocess.run([runner, script] + cases, capture_output=True, text=True)
want = [
    r"FAIL not_json: .*not_json\.json:1: not JSON: parse error: .*",
    r"FAIL not_object: .*not_object\.json: a case is a JSON object",
    r'FAIL unknown_key: .*unknown_key\.json: unexpected key or type: "expect_emit"',
    r"FAIL missing: cannot open .*missing\.json",
    r'FAIL int_vs_float: emit 1: payload differs at \.v: got \{"v":1\}',
    r'FAIL nul: emit 1: payload differs at \.s: got \{"s":"a\\u0000b"\}',
    r"PASS nul_exact",
    r"FAIL reply_missing: expected a reply, got none",
    r"1 passed, 7 failed",
]
lines = p.stdout.splitlines()
bad = p.returncode != 1 or len(lines) != len(want)
for w, line in zip(want, lines):
    if not re.fullmatch(w, line):
        print("want /%s/\n got  %s" % (w, line))
        bad = True
if bad:
    print("exit status %d, output:\n%s%s" % (p.returncode, p.stdout, p.stderr))
    sys.exit(1)
print("ok: %d lines as expected, exit status 1" % len(lines))
