#!/usr/bin/env bash
# brokers.sh: Kafka, Redis Streams and RabbitMQ through gust (broker -> source -> JetStream
# -> sink -> broker) against each broker's own relay and the bus alone on the same path,
# every id checked once at the target first. brokers.sh [N=20000] [ROUNDS=3]; see
# brokers.py for the method and the other sizes (BROKERS, BROKERS_BUS_SIZE). Prints JSON
# and writes bench/results/brokers.json.
BENCH_COMMAND="bench/brokers.sh${*:+ $*}" exec python3 "$(dirname "$0")/brokers.py" "$@"
