#!/usr/bin/env python3
"""Runs VPL cases through `gust-vpl vpl-run` and compares the alerts.

usage: run_cases.py GUST_VPL CASES_DIR...

Each case is a folder with program.vpl, events.jsonl and expected.jsonl (the format is
in tests/vpl/README.md). Alerts are compared in order, key by key: every expected key
must be present with an equal value, the actual alert may carry no other key except
"timestamp", numbers compare by value (an int/float mismatch is a warning). An optional
stderr.txt holds the exact expected standard error (default: empty).
"""
import json
import os
import subprocess
import sys


def same(exp, act, path, warnings):
    if isinstance(exp, bool) or isinstance(act, bool):
        return exp is act if isinstance(exp, bool) and isinstance(act, bool) else False
    if isinstance(exp, (int, float)) and isinstance(act, (int, float)):
        if type(exp) is not type(act):
            warnings.append(f"{path}: expected {exp!r}, got {act!r} (int/float)")
        return exp == act
    if isinstance(exp, dict) and isinstance(act, dict):
        return exp.keys() == act.keys() and all(
            same(exp[k], act[k], f"{path}.{k}", warnings) for k in exp)
    if isinstance(exp, list) and isinstance(act, list):
        return len(exp) == len(act) and all(
            same(e, a, f"{path}[{i}]", warnings) for i, (e, a) in enumerate(zip(exp, act)))
    return exp == act


def compare(expected, actual):
    """Returns (errors, warnings)."""
    errors, warnings = [], []
    for i, (exp, act) in enumerate(zip(expected, actual)):
        extra = set(act) - set(exp) - {"timestamp"}
        missing = set(exp) - set(act)
        if extra or missing:
            errors.append(f"alert {i + 1}: keys differ (missing {sorted(missing)}, "
                          f"extra {sorted(extra)}): {json.dumps(act)}")
            continue
        for k in exp:
            if not same(exp[k], act[k], f"alert {i + 1}.{k}", warnings):
                errors.append(f"alert {i + 1}: {k}: expected {exp[k]!r}, got {act[k]!r}")
    if len(expected) != len(actual):
        errors.append(f"expected {len(expected)} alerts, got {len(actual)}")
        for a in actual[len(expected):]:
            errors.append(f"  unexpected: {json.dumps(a)}")
        for e in expected[len(actual):]:
            errors.append(f"  not produced: {json.dumps(e)}")
    return errors, warnings


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_case(binary, case):
    program = os.path.join(case, "program.vpl")
    events = os.path.join(case, "events.jsonl")
    proc = subprocess.run([binary, "vpl-run", program, events], capture_output=True,
                          timeout=60)
    errors = []
    if proc.returncode != 0:
        errors.append(f"exit status {proc.returncode}: {proc.stderr.decode(errors='replace')}")
        return errors, []
    want_err = ""
    err_file = os.path.join(case, "stderr.txt")
    if os.path.exists(err_file):
        with open(err_file, encoding="utf-8") as f:
            want_err = f.read().replace("EVENTS", events)
    got_err = proc.stderr.decode(errors="replace")
    if got_err != want_err:
        errors.append(f"stderr: expected {want_err!r}, got {got_err!r}")
    actual = []
    for n, line in enumerate(proc.stdout.decode("utf-8").splitlines(), 1):
        try:
            actual.append(json.loads(line))
        except ValueError as e:
            errors.append(f"output line {n} is not JSON ({e}): {line!r}")
    if errors:
        return errors, []
    e, w = compare(load_jsonl(os.path.join(case, "expected.jsonl")), actual)
    return errors + e, w


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    failed = total = 0
    for root in sys.argv[2:]:
        if not os.path.isdir(root):
            print(f"FAIL {root}: no such directory")
            failed += 1
            continue
        for name in sorted(os.listdir(root)):
            case = os.path.join(root, name)
            if not os.path.exists(os.path.join(case, "program.vpl")):
                continue
            total += 1
            errors, warnings = run_case(binary, case)
            print(f"{'FAIL' if errors else 'PASS'} {name}")
            for w in warnings:
                print(f"  warning: {w}")
            for e in errors:
                print(f"  {e}")
            failed += bool(errors)
    print(f"{total - failed}/{total} cases passed")
    return 1 if failed or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
