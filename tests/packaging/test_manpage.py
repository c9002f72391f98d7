"""gust-host.conf(5) lists exactly the blocks and keys of `gust --help`, in the same order,
plugin types included (both come from the schemas; this proves the page was generated
from the binary and plugins it ships with). Usage: test_manpage.py GUST HOST.CONF.5"""
import re
import subprocess
import sys


def help_keys(gust):
    out = subprocess.run([gust, "--help"], check=True, capture_output=True, text=True).stdout
    text = out.split("host.conf keys", 1)[1].split("\n", 2)[2]  # after the two header lines
    keys, title = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            title = line.strip()
        elif not line.startswith("  KEY "):
            keys.append((title, line.split()[0]))
    return keys


def unroff(s):
    return s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def man_keys(page):
    keys, title, lines = [], None, open(page).read().split("\n")
    section = None
    for i, line in enumerate(lines):
        if line.startswith(".SH "):
            section = line[4:].strip()
        elif section == "KEYS" and line.startswith(".SS "):
            title = unroff(line[4:].strip())
        elif section == "KEYS" and line == ".TP" and lines[i + 1].startswith(".B "):
            keys.append((title, unroff(lines[i + 1][3:].strip())))
    return keys


def main():
    gust, page = sys.argv[1], sys.argv[2]
    h, m = help_keys(gust), man_keys(page)
    failed = 0
    if h != m:
        failed = 1
        print("FAIL: --help and %s differ" % page)
        for x in sorted(set(h) - set(m)):
            print("  only in --help: %s / %s" % x)
        for x in sorted(set(m) - set(h)):
            print("  only in the page: %s / %s" % x)
    titles = {t for t, _ in h}
    checks = [len(h) > 60, "http { }" in titles, any("use http_out;" in t for t in titles),
              ("http { }", "admin_token_file") in h, any(re.search(r"use timer;", t) for t in titles)]
    for n, ok in enumerate(checks):
        if not ok:
            failed += 1
            print("FAIL: check %d on the --help key list" % n)
    print("%d passed, %d failed" % (len(checks) + 1 - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
