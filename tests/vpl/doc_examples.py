#!/usr/bin/env python3
"""Runs every example of a Markdown document through `gust-vpl`, so that the
document cannot drift from the engine (ctest vpl_doc_examples over docs/VPL.md).

usage: doc_examples.py GUST_VPL DOC.md

An example starts with a fenced block whose info string is `vpl`: a complete program.
The fenced blocks after it, up to the next `vpl` block, say what it does:

  ```events   JSON lines fed to `vpl-run rule.vpl events.jsonl`, followed by
  ```alerts   the alerts it must print, in order (an empty block: none), and optionally
  ```stderr   what it must write on standard error (default: nothing);
  ```check    what `vpl-check rule.vpl` must say: `ok`, or the diagnostic.

A program followed by neither must check `ok`. Several events/alerts pairs may follow
one program. The program and the events are written to rule.vpl and events.jsonl in a
temporary directory, the commands run there, so messages read as a user sees them.

Alerts compare as JSON text, key order and int/float included, except that an expected
alert without "timestamp" is compared with the actual one's "timestamp" removed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)(`{3,})\s*([^`\s]*)\s*$")
KINDS = ("vpl", "events", "alerts", "stderr", "check")


def blocks(path):
    """(line number, info string, text) of every fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, info = m.group(1), m.group(2), m.group(3)
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not (lines[i].strip() == ticks and lines[i].startswith(indent)):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}:{start}: fenced block never closed")
        out.append((start, info, "\n".join(body)))
        i += 1
    return out


def examples(path):
    """Groups the blocks: [{"line", "program", "check", "runs": [(line, events, alerts,
    stderr)]}]; raises SystemExit on a block that belongs to no program."""
    found, cur = [], None
    for line, info, text in blocks(path):
        if info not in KINDS:
            continue
        where = f"{path}:{line}"
        if info == "vpl":
            cur = {"line": line, "program": text, "check": None, "runs": []}
            found.append(cur)
            continue
        if cur is None:
            raise SystemExit(f"{where}: a `{info}` block before any `vpl` block")
        if info == "check":
            if cur["check"] is not None or cur["runs"]:
                raise SystemExit(f"{where}: `check` must be the only block after its program")
            cur["check"] = (line, text.strip())
        elif info == "events":
            if cur["check"] is not None:
                raise SystemExit(f"{where}: `events` after a `check` block")
            if cur["runs"] and cur["runs"][-1][2] is None:
                raise SystemExit(f"{where}: `events` without the `alerts` of the previous ones")
            cur["runs"].append([line, text, None, None])
        elif info == "alerts":
            if not cur["runs"] or cur["runs"][-1][2] is not None:
                raise SystemExit(f"{where}: `alerts` without `events` before it")
            cur["runs"][-1][2] = (line, text)
        elif info == "stderr":
            if not cur["runs"] or cur["runs"][-1][2] is None or cur["runs"][-1][3] is not None:
                raise SystemExit(f"{where}: `stderr` must follow an `alerts` block")
            cur["runs"][-1][3] = text.strip()
    for ex in found:
        if ex["runs"] and ex["runs"][-1][2] is None:
            raise SystemExit(f"{path}:{ex['runs'][-1][0]}: `events` without `alerts` after them")
    return found


def normal(text, drop_timestamp):
    obj = json.loads(text)
    if drop_timestamp and isinstance(obj, dict):
        obj.pop("timestamp", None)
    return json.dumps(obj)


def run(cmd, cwd):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def check_example(binary, path, ex, tmp):
    """A list of failure messages."""
    errors = []
    with open(os.path.join(tmp, "rule.vpl"), "w", encoding="utf-8") as f:
        f.write(ex["program"] + "\n")
    line, want = ex["check"] if ex["check"] is not None else (ex["line"], None)
    rc, out, err = run([binary, "vpl-check", "rule.vpl"], tmp)
    got = out.strip() if rc == 0 else err.strip()
    if want is None and rc != 0:
        return [f"{path}:{ex['line']}: the program does not check: {got}"]
    if want is not None and (got != want or rc != (0 if want == "ok" else 1)):
        return [f"{path}:{line}: vpl-check says\n    {got}\n  (exit {rc}), the document says\n    {want}"]
    for eline, events, (aline, alerts), stderr in ex["runs"]:
        with open(os.path.join(tmp, "events.jsonl"), "w", encoding="utf-8") as f:
            f.write(events + "\n")
        rc, out, err = run([binary, "vpl-run", "rule.vpl", "events.jsonl"], tmp)
        if rc != 0:
            errors.append(f"{path}:{eline}: vpl-run exit {rc}: {err.strip()}")
            continue
        if err.strip() != (stderr or ""):
            errors.append(f"{path}:{eline}: vpl-run wrote on stderr\n    {err.strip()!r}\n"
                          f"  the document says\n    {stderr or ''!r}")
        expected = [(aline + 1 + k, t) for k, t in enumerate(alerts.split("\n")) if t.strip()]
        actual = [t for t in out.split("\n") if t.strip()]
        for k, (n, text) in enumerate(expected):
            try:
                want_text = normal(text, False)
                drop = "timestamp" not in json.loads(text)
            except ValueError as e:
                errors.append(f"{path}:{n}: the expected alert is not JSON ({e})")
                continue
            if k >= len(actual):
                errors.append(f"{path}:{n}: not produced: {text}")
                continue
            got_text = normal(actual[k], drop)
            if got_text != want_text:
                errors.append(f"{path}:{n}: alert {k + 1} differs\n    got      {got_text}\n"
                              f"    expected {want_text}")
        for extra in actual[len(expected):]:
            errors.append(f"{path}:{aline}: an alert the document does not show: {extra}")
    return errors


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, path = os.path.abspath(sys.argv[1]), sys.argv[2]
    found = examples(path)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ex in found:
            errors = check_example(binary, path, ex, tmp)
            runs = len(ex["runs"])
            what = f"{runs} run{'s' if runs != 1 else ''}" if runs else "check"
            print(f"{'FAIL' if errors else 'PASS'} {path}:{ex['line']} ({what})")
            for e in errors:
                print(f"  {e}")
            failed += bool(errors)
    print(f"{len(found) - failed}/{len(found)} examples passed")
    return 1 if failed or not found else 0


if __name__ == "__main__":
    sys.exit(main())
