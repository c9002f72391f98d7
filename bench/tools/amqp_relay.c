/* gust-bench-amqp URL COMMAND ...: RabbitMQ's own side of bench/brokers.sh, on rabbitmq-c
 * (there is no Python AMQP library on the build machines).
 *
 *   relay SRC DST N [PREFETCH]   moves N messages from queue SRC to queue DST with the
 *                                guarantee gust's amqp_in -> amqp_out path gives, and no
 *                                bus between: consume SRC (basic.qos PREFETCH, default
 *                                256, amqp_in's default), publish each delivery to the
 *                                default exchange with routing key DST (persistent,
 *                                mandatory, message_id kept) on a second connection in
 *                                confirm mode, and ack each delivery once its publish is
 *                                confirmed (basic.ack multiple). Prints
 *                                {"moved":N,"seconds":S} when all N are acked.
 *   watch QUEUE N [TIMEOUT_S]    the depth of QUEUE (a passive queue.declare every 5 ms on
 *                                one connection) until it holds N: prints
 *                                {"first_s":T,"first_count":C,"done_s":T2,"polls":P}, the
 *                                times on one monotonic clock, the first at the first poll
 *                                that saw a message (C of them). Default timeout 120 s.
 *
 * Exits 1 with the broker's error on stderr, 2 on bad arguments. */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die_reply(amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        return;
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *c = r.reply.decoded;
        fprintf(stderr, "gust-bench-amqp: %s: %.*s\n", what, (int)c->reply_text.len,
                (char *)c->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_t *c = r.reply.decoded;
        fprintf(stderr, "gust-bench-amqp: %s: %.*s\n", what, (int)c->reply_text.len,
                (char *)c->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        fprintf(stderr, "gust-bench-amqp: %s: %s\n", what, amqp_error_string2(r.library_error));
    } else {
        fprintf(stderr, "gust-bench-amqp: %s: failed\n", what);
    }
    exit(1);
}

static amqp_connection_state_t connect_to(const char *url)
{
    struct amqp_connection_info ci;
    struct timeval tv = {10, 0};
    char *copy = strdup(url);
    amqp_default_connection_info(&ci);
    if (copy == NULL || amqp_parse_url(copy, &ci) != AMQP_STATUS_OK) {
        fprintf(stderr, "gust-bench-amqp: bad url %s\n", url);
        exit(2);
    }
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(conn);
    int rc = amqp_socket_open_noblock(s, ci.host, ci.port, &tv);
    if (rc != AMQP_STATUS_OK) {
        fprintf(stderr, "gust-bench-amqp: connect: %s\n", amqp_error_string2(rc));
        exit(1);
    }
    amqp_set_rpc_timeout(conn, &tv);
    die_reply(amqp_login(conn, ci.vhost, 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, ci.user,
                         ci.password),
              "login");
    amqp_channel_open(conn, 1);
    die_reply(amqp_get_rpc_reply(conn), "channel.open");
    free(copy);
    return conn;
}

/* What the relay has done: deliveries taken from SRC (their tags count 1, 2, ... on the
 * consuming channel, as the publishes' sequence numbers do on the confirming one, so tag
 * k is the publish k), publishes confirmed, deliveries acked. */
struct relay {
    amqp_connection_state_t in, out;
    const char *dst;
    uint64_t n, taken, confirmed, acked;
};

/* Takes the deliveries that have arrived (none waited for) and publishes each to DST:
 * persistent, mandatory, its message_id kept. How many, -1 on error. */
static int take(struct relay *r)
{
    struct timeval now = {0, 0};
    int got = 0;
    while (r->taken < r->n) {
        amqp_envelope_t env;
        amqp_maybe_release_buffers(r->in);
        amqp_rpc_reply_t rr = amqp_consume_message(r->in, &env, &now, 0);
        if (rr.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && rr.library_error == AMQP_STATUS_TIMEOUT) {
            break;
        }
        die_reply(rr, "consume");
        amqp_basic_properties_t p = {0};
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
        p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
        p.content_type = amqp_cstring_bytes("application/json");
        if (env.message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
            p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
            p.message_id = env.message.properties.message_id;
        }
        int rc = amqp_basic_publish(r->out, 1, amqp_empty_bytes, amqp_cstring_bytes(r->dst), 1, 0, &p,
                                    env.message.body);
        amqp_destroy_envelope(&env);
        if (rc != AMQP_STATUS_OK) {
            fprintf(stderr, "gust-bench-amqp: publish: %s\n", amqp_error_string2(rc));
            return -1;
        }
        r->taken++;
        got++;
    }
    return got;
}

/* Reads the confirms that have arrived (none waited for). A nack, a return or a closed
 * channel ends the run: the ceiling counts only what arrived. How many frames, -1 on error. */
static int confirms(struct relay *r)
{
    struct timeval now = {0, 0};
    int got = 0;
    while (r->confirmed < r->taken) {
        amqp_frame_t f;
        amqp_maybe_release_buffers(r->out);
        int rc = amqp_simple_wait_frame_noblock(r->out, &f, &now);
        if (rc == AMQP_STATUS_TIMEOUT) {
            break;
        }
        if (rc != AMQP_STATUS_OK) {
            fprintf(stderr, "gust-bench-amqp: confirms: %s\n", amqp_error_string2(rc));
            return -1;
        }
        got++;
        if (f.frame_type != AMQP_FRAME_METHOD) {
            continue;
        }
        if (f.payload.method.id != AMQP_BASIC_ACK_METHOD) {
            fprintf(stderr,
                    "gust-bench-amqp: publish: method 0x%08x instead of basic.ack (a nack, a return or a "
                    "closed channel)\n",
                    (unsigned)f.payload.method.id);
            return -1;
        }
        amqp_basic_ack_t *a = f.payload.method.decoded;
        r->confirmed = a->delivery_tag > r->confirmed ? a->delivery_tag : r->confirmed;
    }
    return got;
}

/* Streams: takes what has arrived, publishes it, reads the confirms, acks every delivery
 * whose publish is confirmed (basic.ack multiple), and waits on both sockets only when
 * there was nothing to do, so the prefetch window stays full as amqp_in keeps it. */
static int relay(const char *url, const char *src, const char *dst, uint64_t n, int prefetch)
{
    struct relay r = {.in = connect_to(url), .out = connect_to(url), .dst = dst, .n = n};
    amqp_queue_declare(r.out, 1, amqp_cstring_bytes(dst), 0, 1, 0, 0, amqp_empty_table);
    die_reply(amqp_get_rpc_reply(r.out), "queue.declare");
    amqp_confirm_select(r.out, 1);
    die_reply(amqp_get_rpc_reply(r.out), "confirm.select");
    amqp_basic_qos(r.in, 1, 0, (uint16_t)prefetch, 0);
    die_reply(amqp_get_rpc_reply(r.in), "basic.qos");
    amqp_basic_consume(r.in, 1, amqp_cstring_bytes(src), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    die_reply(amqp_get_rpc_reply(r.in), "basic.consume");

    double t0 = now_s();
    while (r.acked < n) {
        int took = take(&r), heard = confirms(&r);
        if (took < 0 || heard < 0) {
            return 1;
        }
        if (r.confirmed > r.acked) {
            if (amqp_basic_ack(r.in, 1, r.confirmed, 1) != AMQP_STATUS_OK) {
                fprintf(stderr, "gust-bench-amqp: basic.ack failed\n");
                return 1;
            }
            r.acked = r.confirmed;
        }
        if (took == 0 && heard == 0) {
            struct pollfd fds[2] = {{.fd = amqp_get_sockfd(r.in), .events = POLLIN},
                                    {.fd = amqp_get_sockfd(r.out), .events = POLLIN}};
            if (poll(fds, 2, 30000) == 0) {
                fprintf(stderr,
                        "gust-bench-amqp: relay: %" PRIu64 " of %" PRIu64 " moved, nothing for 30 s\n",
                        r.acked, n);
                return 1;
            }
        }
    }
    printf("{\"moved\":%" PRIu64 ",\"seconds\":%.3f}\n", r.acked, now_s() - t0);
    amqp_connection_close(r.in, AMQP_REPLY_SUCCESS);
    amqp_connection_close(r.out, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(r.in);
    amqp_destroy_connection(r.out);
    return 0;
}

static int watch(const char *url, const char *queue, uint64_t n, double timeout)
{
    amqp_connection_state_t c = connect_to(url);
    double t0 = now_s(), first = -1;
    uint64_t first_count = 0, polls = 0;
    for (;;) {
        amqp_queue_declare_ok_t *ok =
            amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
        if (ok == NULL) {
            die_reply(amqp_get_rpc_reply(c), "queue.declare (passive)");
        }
        double t = now_s();
        uint64_t count = ok->message_count;
        amqp_maybe_release_buffers(c);
        polls++;
        if (count > 0 && first < 0) {
            first = t;
            first_count = count;
        }
        if (count >= n) {
            printf("{\"first_s\":%.4f,\"first_count\":%" PRIu64 ",\"done_s\":%.4f,\"count\":%" PRIu64
                   ",\"polls\":%" PRIu64 "}\n",
                   first, first_count, t, count, polls);
            break;
        }
        if (t - t0 > timeout) {
            fprintf(stderr, "gust-bench-amqp: watch: %" PRIu64 " of %" PRIu64 " in %s after %.0f s\n", count,
                    n, queue, timeout);
            return 1;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[2], "relay") == 0) {
        int prefetch = argc > 6 ? atoi(argv[6]) : 256;
        uint64_t n = strtoull(argv[5], NULL, 10);
        if (prefetch >= 1 && prefetch <= 65535 && n > 0) {
            return relay(argv[1], argv[3], argv[4], n, prefetch);
        }
    } else if (argc >= 5 && strcmp(argv[2], "watch") == 0) {
        uint64_t n = strtoull(argv[4], NULL, 10);
        double timeout = argc > 5 ? atof(argv[5]) : 120;
        if (n > 0 && timeout > 0) {
            return watch(argv[1], argv[3], n, timeout);
        }
    }
    fprintf(stderr,
            "usage: gust-bench-amqp URL relay SRC DST N [PREFETCH] | URL watch QUEUE N [TIMEOUT_S]\n");
    return 2;
}
