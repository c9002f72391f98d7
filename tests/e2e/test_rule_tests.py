"""gust vpl-test and a detect block's `tests DIR;` under gust -t.

- The repository's own rules pass their cases in rules/tests/<rule>/, and every
  acceptance case of tests/vpl/cases passes through vpl-test as through run_cases.py.
- A wrong case exits 1 and names each difference: a field that differs, one missing, one
  extra, an alert not made, an alert not expected.
- A case or program that cannot run exits 2 with the reason (a VPL error as file:line:col).
- gust -t runs a detect block's tests: passing cases keep it successful, a failing one
  fails it naming the block's `tests` line."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gustlib import GUST, Checks, TempDir  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
connector Bus = nats (url: "ignored: the host's bus")

event Order:
    id: int
    amount: float

stream Orders = Order.from(Bus, topic: "ev.orders")

stream Big = Orders
    .where(amount > 100.0)
    .emit(id: id, amount: amount, size: if amount > 1000.0 then "huge" else "big")
"""

EVENTS = [
    {"event_type": "Order", "ts": 1000, "id": 1, "amount": 50.0},
    {"event_type": "Order", "ts": 2000, "id": 2, "amount": 150.0},
    {"event_type": "Order", "ts": 3000, "id": 3, "amount": 5000.0},
]
RIGHT = [
    {"event_type": "Big", "id": 2, "amount": 150, "size": "big"},
    {"event_type": "Big", "id": 3, "amount": 5000.0, "size": "huge"},
]


def vpl_test(*args):
    return subprocess.run([GUST, "vpl-test"] + list(args), capture_output=True, text=True, timeout=60)


def main():
    t = Checks()
    tmp = TempDir()
    try:
        for rule in sorted(os.listdir(os.path.join(ROOT, "rules", "tests"))):
            p = vpl_test(os.path.join(ROOT, "rules", rule + ".vpl"), os.path.join(ROOT, "rules", "tests", rule))
            t.eq(p.returncode, 0, "rules/%s.vpl passes its cases:\n%s%s" % (rule, p.stdout, p.stderr))
        p = vpl_test(os.path.join(ROOT, "tests", "vpl", "cases"))
        t.eq(p.returncode, 0, "the acceptance cases pass:\n" + p.stdout[-2000:])
        t.check(" 0 failed" in p.stdout and int(p.stdout.strip().splitlines()[-1].split()[0]) >= 50,
                "every acceptance case ran: " + p.stdout.strip().splitlines()[-1])

        program = tmp.file("orders.vpl", PROGRAM)
        right = tmp.file("right.json", json.dumps({"events": EVENTS, "expect_alerts": RIGHT}))
        p = vpl_test(program, right)
        t.eq(p.returncode, 0, "a right case passes: " + p.stdout)
        t.check("right.json: ok (3 events, 2 alerts expected)" in p.stdout, "it says ok: " + p.stdout)

        wrong_alerts = [
            {"event_type": "Big", "id": 2, "amount": 151.0, "size": "big", "note": "x"},
            {"event_type": "Big", "id": 3, "amount": 5000.0},
            {"event_type": "Big", "id": 4, "amount": 200.0, "size": "big"},
        ]
        wrong = tmp.file("wrong.json", json.dumps({"events": EVENTS, "expect_alerts": wrong_alerts}))
        p = vpl_test(program, wrong)
        t.eq(p.returncode, 1, "a wrong case exits 1")
        for want in ("alert 1: amount: expected 151.0, got 150.0",
                     "alert 1: missing field note",
                     "alert 2: extra field size = \"huge\"",
                     "alert 3 not made: {\"event_type\":\"Big\",\"id\":4",
                     "wrong.json: FAILED",
                     "0 passed, 1 failed"):
            t.check(want in p.stdout, "the diff says %r:\n%s" % (want, p.stdout))
        fewer = tmp.file("fewer.json", json.dumps({"events": EVENTS, "expect_alerts": RIGHT[:1]}))
        p = vpl_test(program, fewer)
        t.eq(p.returncode, 1, "an alert not expected fails the case")
        t.check("alert 2 not expected: {\"event_type\":\"Big\"" in p.stdout, "names the extra alert: " + p.stdout)

        # A folder case (the acceptance layout) with its own program beside a file case.
        folder = os.path.join(tmp.path, "folder")
        os.makedirs(folder)
        tmp.file("folder/program.vpl", PROGRAM)
        tmp.file("folder/events.jsonl", "".join(json.dumps(e) + "\n" for e in EVENTS))
        tmp.file("folder/expected.jsonl", "".join(json.dumps(a) + "\n" for a in RIGHT))
        p = vpl_test(program, folder, right)
        t.eq(p.returncode, 0, "a folder case and a file case: " + p.stdout)
        t.check("2 passed, 0 failed" in p.stdout, "both counted: " + p.stdout)

        # Cannot run: exit 2, with the reason.
        bad_program = tmp.file("bad.vpl", "stream X = Order\n    .where(amount >)\n")
        p = vpl_test(bad_program, right)
        t.eq(p.returncode, 2, "a program that does not compile exits 2")
        t.check("bad.vpl:2:" in p.stdout, "its error names line:col: " + p.stdout)
        p = vpl_test(program, tmp.file("broken.json", "{\"events\": ["))
        t.eq(p.returncode, 2, "a case that is not JSON exits 2")
        t.check("broken.json: not JSON" in p.stdout, "says why: " + p.stdout)
        p = vpl_test(program, tmp.file("shape.json", "{\"events\": []}"))
        t.eq(p.returncode, 2, "a case without expect_alerts exits 2")
        p = vpl_test(program, os.path.join(tmp.path, "nosuch.json"))
        t.eq(p.returncode, 2, "a missing case exits 2")
        p = vpl_test()
        t.eq(p.returncode, 2, "no arguments: usage, exit 2")

        # gust -t runs a detect block's tests.
        cases = os.path.join(tmp.path, "cases")
        os.makedirs(cases)
        tmp.file("cases/right.json", json.dumps({"events": EVENTS, "expect_alerts": RIGHT}))
        conf = tmp.file("host.conf", "http { listen 127.0.0.1:1; }\nnats { url nats://127.0.0.1:1; }\n"
                        "detect big {\n    rules orders.vpl;\n    tests cases;\n}\n")
        p = subprocess.run([GUST, "-t", "-c", conf], capture_output=True, text=True, timeout=60)
        t.eq(p.returncode, 0, "gust -t with passing rule tests:\n" + p.stderr)
        t.check("cases/right.json: ok" in p.stderr, "gust -t shows the case: " + p.stderr)
        tmp.file("cases/wrong.json", json.dumps({"events": EVENTS, "expect_alerts": wrong_alerts}))
        p = subprocess.run([GUST, "-t", "-c", conf], capture_output=True, text=True, timeout=60)
        t.eq(p.returncode, 1, "gust -t with a failing rule test")
        t.check("host.conf:5: detect 'big': 1 of 2 rule tests failed" in p.stderr,
                "names the tests line and the count: " + p.stderr)
        t.check("alert 1: amount: expected 151.0, got 150.0" in p.stderr, "and the diff: " + p.stderr)
    finally:
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
