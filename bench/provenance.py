"""Where a benchmark's figures come from: the fields every results file records, and the
one way a results file is written. Used by the Python benchmarks (import it) and, through
its command line, by bench/lib.sh's emit_result (the shell benchmarks and
bench/compare/run.sh).

The fields, added after the first key ("scenario") of a results document:
  commit      `git describe --always` of the source tree the build was made from, with
              "-dirty" when tracked files differ from it (bench/results, bench/plots and
              bench/README.md excepted: the benchmarks and report.sh write those, so a run
              after another would otherwise always read as dirty); "unknown" outside git
  cpu_model   the "model name" of /proc/cpuinfo ("unknown" where it has none)
  cores       the cores this process may run on (as nproc counts them)
  build_type  CMAKE_BUILD_TYPE from the build directory's CMakeCache.txt; an empty one is
              CMakeLists.txt's default, RelWithDebInfo; "unknown" without a cache
  date        when the run started, UTC, ISO 8601
  uptime      the load averages (1, 5 and 15 minutes, as uptime prints them) at the start
              and at the end of the run: {"start": [l1, l5, l15], "end": [l1, l5, l15]}
  command     the benchmark as it was started, from the repository's top (the environment's
              BENCH_COMMAND, which bench/lib.sh sets, or this Python process's arguments)

Command line:
  provenance.py start                 the run's start (date and load), a JSON object
  provenance.py emit NAME BUILD START ok|failed
                                      emit() of the JSON object on stdin
  provenance.py build BUILD           {"commit", "build_type"} of another build
  provenance.py machine               "CPU model, N cores, M GiB, kernel"
"""
import json
import os
import re
import subprocess
import sys
import time

# CMakeLists.txt sets this when CMAKE_BUILD_TYPE is empty; the cache keeps the empty value.
DEFAULT_BUILD_TYPE = "RelWithDebInfo"
# What the benchmarks and report.sh write into the tree: not part of what is measured.
OUTPUTS = ("bench/results", "bench/plots", "bench/README.md")
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def load_averages():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def start():
    """The run's start: call it before the work, pass it to fields() after."""
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load": load_averages()}


def cmake_cache(build):
    """The entries of BUILD/CMakeCache.txt ({} when there is none)."""
    entries = {}
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(r"([A-Za-z0-9_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    entries[m.group(1)] = m.group(2)
    except OSError:
        pass
    return entries


def git(src, *args):
    p = subprocess.run(["git", "-C", src] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        raise OSError(p.stderr.strip())
    return p.stdout.strip()


def commit(src):
    try:
        described = git(src, "describe", "--always")
        top = git(src, "rev-parse", "--show-toplevel")
        changed = git(top, "status", "--porcelain", "--untracked-files=no", "--", ":/",
                      *(":(top,exclude)" + p for p in OUTPUTS))
    except OSError:
        return "unknown"
    return described + ("-dirty" if changed else "")


def build_info(build):
    """The commit and build type of what BUILD was built from."""
    cache = cmake_cache(build)
    src = cache.get("CMAKE_HOME_DIRECTORY") or os.path.dirname(BENCH_DIR)
    if "CMAKE_BUILD_TYPE" not in cache:
        build_type = "unknown"
    else:
        build_type = cache["CMAKE_BUILD_TYPE"] or DEFAULT_BUILD_TYPE
    return {"commit": commit(src), "build_type": build_type}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return " ".join(value.split())
    except OSError:
        pass
    return "unknown"


def cores():
    return len(os.sched_getaffinity(0))


def machine():
    """The machine in one line, from the same values as the fields."""
    with open("/proc/meminfo") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    u = os.uname()
    return "%s, %d cores, %.0f GiB, %s %s" % (cpu_model(), cores(), kb / 1048576, u.sysname, u.release)


def command():
    if os.environ.get("BENCH_COMMAND"):
        return os.environ["BENCH_COMMAND"]
    script = os.path.relpath(os.path.abspath(sys.argv[0]), os.path.dirname(BENCH_DIR))
    return " ".join([script] + sys.argv[1:])


def fields(build, started):
    info = build_info(build)
    return {"commit": info["commit"], "cpu_model": cpu_model(), "cores": cores(),
            "build_type": info["build_type"], "date": started["date"],
            "uptime": {"start": started["load"], "end": load_averages()}, "command": command()}


def with_fields(doc, build, started):
    """DOC with the provenance fields after its first key (any it has are replaced)."""
    prov = fields(build, started)
    out = {}
    items = [(k, v) for k, v in doc.items() if k not in prov]
    for i, (k, v) in enumerate(items):
        out[k] = v
        if i == 0:
            out.update(prov)
    if not items:
        out.update(prov)
    return out


def dumps(doc):
    """One top-level field a line: diffs of a results file show which figures moved."""
    return "{" + ",\n ".join("%s:%s" % (json.dumps(k), json.dumps(v, separators=(",", ":"), ensure_ascii=False))
                             for k, v in doc.items()) + "}\n"


def emit(name, doc, build, started, ok=True, dest=None):
    """Prints DOC with its provenance and, when OK, writes it to DEST (default
    bench/results/NAME.json; the environment's RESULT overrides it, RESULT= writes
    nothing). A run whose checks failed is printed only: its figures do not stand."""
    text = dumps(with_fields(doc, build, started))
    sys.stdout.write(text)
    sys.stdout.flush()
    if dest is None:
        dest = os.environ.get("RESULT", os.path.join(BENCH_DIR, "results", name + ".json"))
    if not dest:
        return
    if not ok:
        print("%s: the run failed its checks; %s not written" % (name, dest), file=sys.stderr)
        return
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    with open(dest, "w") as f:
        f.write(text)


def main(argv):
    if argv[:1] == ["start"]:
        print(json.dumps(start()))
    elif argv[:1] == ["emit"] and len(argv) == 5 and argv[4] in ("ok", "failed"):
        emit(argv[1], json.load(sys.stdin), argv[2], json.loads(argv[3]), ok=argv[4] == "ok")
    elif argv[:1] == ["build"] and len(argv) == 2:
        print(json.dumps(build_info(argv[1])))
    elif argv[:1] == ["machine"]:
        print(machine())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
