#!/usr/bin/env python3
"""Checks `gust-vpl vpl-check` diagnostics, and that hostile programs cannot crash it.

usage: check_errors.py GUST_VPL ERRORS_DIR

For every NAME.vpl in ERRORS_DIR, NAME.expect holds the exact expected diagnostic
without the file name ("line:col: message"), or "ok" for a program that must check.
Then generated programs (deep nesting, long chains, garbage bytes) must be rejected or
accepted cleanly: exit status 0 or 1, never a signal or a hang.
"""
import os
import random
import subprocess
import sys
import tempfile


def check(binary, path):
    proc = subprocess.run([binary, "vpl-check", path], capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def generated():
    """(name, program text, expected substring of stderr, or None for "ok")."""
    deep = "nested deeper than 200"
    n = 100000
    yield "parens", "stream S = A .where(" + "(" * n + "x" + ")" * n + ")", deep
    yield "unary_minus", "stream S = A .where(" + "-" * n + "x > 1)", deep
    yield "not_chain", "stream S = A .where(" + "not " * n + "x)", deep
    yield "arrays", "stream S = A .where(x in " + "[" * n + "1" + "]" * n + ")", deep
    yield "power_chain", "stream S = A .where(" + "2 ** " * n + "2 > x)", deep
    yield "plus_chain", "stream S = A .where(" + "x + " * n + "x > 1)", deep
    yield "and_chain", "stream S = A .where(" + "x and " * n + "x)", deep
    yield "if_chain", "stream S = A .emit(v: " + "if x then 1 else " * n + "0)", deep
    yield "member_chain", "stream S = A .where(x" + ".a" * n + " == 1)", deep
    yield "type_nesting", "event E:\n    f: " + "[" * n + "int" + "]" * n + "\n", "nested deeper than 200"
    yield "at_limit_ok", "stream S = A .where(" + "(" * 150 + "x" + ")" * 150 + " > 1)", None
    chain = "stream S0 = A .where(x > 0)\n" + "".join(
        f"stream S{i} = S{i - 1} .where(x > {i})\n" for i in range(1, 2000))
    yield "stream_chain", chain, "chained more than 64 deep"
    backwards = "".join(f"stream S{i} = S{i + 1} .where(x > {i})\n" for i in range(100000)) + \
        "stream S100000 = A .where(x > 0)\n"
    yield "stream_chain_backwards", backwards, "chained more than 64 deep"
    many = "".join(f"stream S{i} = A .where(x > {i}) .emit(i: {i})\n" for i in range(3000))
    yield "many_streams_ok", many, None
    yield "long_sequence_ok", "stream S = A as a0 " + "".join(
        f"-> A as a{i} " for i in range(1, 500)) + ".within(1m) .emit(x: a0.x)", None
    yield "nested_merges", "stream S = " + "merge(stream a = " * n + "A" + ")" * n + ".emit(x: 1)", \
        "a stream declared inside merge() reads one type or stream"
    yield "coalesce_chain", "stream S = A .emit(v: " + "x ?? " * n + "0)", deep
    calls = "fn f0(x: int) -> int:\n    return x + 1\n" + "".join(
        f"fn f{i}(x: int) -> int:\n    return f{i - 1}(f{i - 1}(x))\n" for i in range(1, 300)) + \
        "stream S = A .emit(v: f299(1))\n"
    yield "fn_call_chain", calls, "deeper than 200 levels"
    backwards_fns = "".join(f"fn f{i}(x: int) -> int:\n    return f{i + 1}(x)\n" for i in range(100000)) + \
        "fn f100000(x: int) -> int:\n    return x\nstream S = A .emit(v: f0(1))\n"
    yield "fn_call_chain_backwards", backwards_fns, "call each other more than 200 deep"
    nested = "fn f(x: int) -> int:\n" + "".join(
        "    " * (i + 1) + "if x > 1:\n" for i in range(300)) + "    " * 301 + "return 1\n"
    yield "fn_nested_ifs", nested, deep
    lets = "fn f(x: int) -> int:\n" + "".join(f"    let a{i} = {i}\n" for i in range(70)) + \
        "    return x\n"
    yield "fn_too_many_lets", lets, "at most 64 parameters and lets"
    yield "unterminated_comment", "stream S = A /* never closed", "unterminated block comment"
    yield "empty_ok", "", None
    rnd = random.Random(7)
    for i in range(20):
        blob = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 2000)))
        yield f"garbage_{i}", blob, ""


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, root = sys.argv[1], sys.argv[2]
    failed = total = 0
    for name in sorted(os.listdir(root)):
        if not name.endswith(".vpl"):
            continue
        total += 1
        path = os.path.join(root, name)
        with open(path[:-4] + ".expect", encoding="utf-8") as f:
            want = f.read().strip()
        rc, out, err = check(binary, path)
        got = out.strip() if rc == 0 else err.strip()
        if want != "ok":
            want = f"{path}:{want}"
        ok = got == want and rc == (0 if want == "ok" else 1)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f"\n  expected {want!r}\n  got      {got!r} (exit {rc})"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, want in generated():
            total += 1
            path = os.path.join(tmp, name + ".vpl")
            with open(path, "wb") as f:
                f.write(text.encode() if isinstance(text, str) else text)
            try:
                rc, out, err = check(binary, path)
            except subprocess.TimeoutExpired:
                rc, err = "timeout", ""
            if want is None:
                ok = rc == 0
            else:
                ok = rc == 1 and want in err
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} generated {name}" +
                  ("" if ok else f" (exit {rc}): {err[:300]!r}"))
    print(f"{total - failed}/{total} error checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
