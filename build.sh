#!/usr/bin/env bash
# The two commands of the README, on a fresh Debian 12 machine as root:
#   ./build.sh run    install what is missing, build, run gust on host.conf (embedded NATS)
#   ./build.sh test   install what is missing, build (and a sanitizer build), run every test
#                     (the Debian packages too: built, installed, run, purged)
# Also: ./build.sh deps | build | deb (build-deb/gust_*.deb and gust-dev_*.deb, lintian-checked)
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake pkg-config clang
          libh2o-evloop-dev libnats-dev libluajit-5.1-dev libyajl-dev libmosquitto-dev
          libssl-dev libcurl4-openssl-dev zlib1g-dev libhiredis-dev librabbitmq-dev librdkafka-dev kcat
          nats-server mosquitto redis-server rabbitmq-server nginx wrk curl python3 python3-cryptography openssl chromium gnuplot-nox
          debhelper dpkg-dev fakeroot lintian)

deps() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    # Node.js and npm (the MCP test's client): Debian's, unless a Node.js that brings its
    # own npm is installed already (NodeSource's nodejs, which Debian's npm conflicts with).
    command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
}

# build DIR [cmake options...]
build() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j"$(nproc)"
}

# The gust and gust-dev packages from a copy of this tree (dpkg-buildpackage writes its
# results beside the tree it builds), into build-deb/, checked by lintian.
deb() {
    local version out=build-deb
    version=$(dpkg-parsechangelog -S Version)
    rm -rf "$out"
    mkdir -p "$out/src/gust-$version"
    tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$out/src/gust-$version"
    (cd "$out/src/gust-$version" && dpkg-buildpackage -us -uc -b)
    mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
    rm -rf "$out/src"
    lintian --fail-on error "$out"/*.changes
    ls "$out"/*.deb
}

case "${1:-}" in
deps)
    deps
    ;;
build)
    deps
    build build
    ;;
deb)
    deps
    deb
    ;;
run)
    deps
    build build
    exec build/gust -c host.conf
    ;;
test)
    deps
    build build -DGUST_WERROR=ON
    ctest --test-dir build --output-on-failure -j2
    # The Debian packages, once: they are installed system-wide, then purged.
    tests/packaging/test_deb.sh build
    # The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
    build build-asan -DGUST_WERROR=ON -DGUST_SANITIZE=ON
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build-asan --output-on-failure -j2 -LE bench
    ;;
*)
    echo "usage: $0 run|test|build|deb|deps" >&2
    exit 2
    ;;
esac
