/* mqtt_in: a source that subscribes to MQTT topics and publishes each message to the bus.
 *
 *   source sensors { use mqtt_in; broker 127.0.0.1:1883; topic sensors/# alerts/+;
 *                    subject_prefix ev.mqtt; qos 1; non_json wrap; }
 *
 * QoS 1 end to end: the broker gets the PUBACK of a message only once JetStream has
 * stored it (see mqtt_in.h for why this needs our own client). Instance lifecycle and
 * the network thread's loop live here; the ring and the connection in their files. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mqtt_in.h"

#define KEY(f, T, def, flags, help) GUST_KEY(struct mqtt_in_keys, f, T, def, flags, help)
const struct gust_schema_key mqtt_in_schema[] = {
    MQTT_COMMON_KEYS(struct mqtt_in_keys),
    KEY(topic, LIST, NULL, GUST_K_REQUIRED, "MQTT topic filters to subscribe to (+ and # allowed)"),
    KEY(subject, SUBJECT, NULL, 0, "publish every message to this subject"),
    KEY(subject_prefix, SUBJECT, NULL, 0,
        "or derive the subject from the topic: prefix + levels as tokens, bytes a token cannot "
        "hold as %XX, empty levels as %00"),
    KEY(non_json, STR, "reject", 0,
        "payload that is not one JSON object: reject (counted, logged, acked), wrap "
        "({\"payload_base64\",\"topic\"}) or pass (unchanged)"),
    GUST_KEY_ENUM(struct mqtt_in_keys, mqtt_version, "3.1.1", 0, "3.1.1|5",
                  "MQTT protocol version; with 5, the user properties traceparent and tracestate become the "
                  "event's headers (the trace goes on), and PUBACKs carry reason codes"),
    KEY(headers, LIST, NULL, 0,
        "mqtt_version 5: more user properties kept as the event's headers (names matched without case; "
        "flows read them in meta.headers)"),
    KEY(max_payload, SIZE, "1m", 0, "larger payloads are rejected (counted, logged)"),
    KEY(max_inflight, INT, "1024", 0, "messages read and not yet stored; past it reading pauses"),
    KEY(reconnect_max, DURATION, "10s", 0, "longest wait between reconnect attempts"),
    GUST_KEY_END,
};

static int load(struct mqtt_in *in, const struct gust_cfg *cfg, struct gust_err *err)
{
    const struct gust_host_api *h = mqtt_host;
    const struct mqtt_in_keys *k = &in->k;
    const char *nj = k->non_json;

    in->subject = k->subject;
    in->prefix = k->subject_prefix;
    if (!in->subject == !in->prefix) {
        return gust_err_set(err, GUST_ECONFIG, "%s: set exactly one of subject and subject_prefix",
                            h->cfg_where(cfg, in->subject ? "subject_prefix" : "topic"));
    }
    if (strcmp(nj, "reject") == 0) {
        in->non_json = NJ_REJECT;
    } else if (strcmp(nj, "wrap") == 0) {
        in->non_json = NJ_WRAP;
    } else if (strcmp(nj, "pass") == 0) {
        in->non_json = NJ_PASS;
    } else {
        return gust_err_set(err, GUST_ECONFIG, "%s: non_json: \"%s\" is not reject, wrap or pass",
                            h->cfg_where(cfg, "non_json"), nj);
    }
    in->version = strcmp(k->mqtt_version, "5") == 0 ? MQTT_V5 : MQTT_V311;
    if (k->headers.n > 0 && in->version != MQTT_V5) {
        return gust_err_set(err, GUST_ECONFIG, "%s: headers needs mqtt_version 5 (MQTT 3.1.1 has no user properties)",
                            h->cfg_where(cfg, "headers"));
    }
    in->max_payload = (size_t)k->max_payload;
    if (k->max_inflight < 1 || k->max_inflight > 65535) {
        return gust_err_set(err, GUST_ECONFIG, "%s: max_inflight: %lld is not within 1..65535",
                            h->cfg_where(cfg, "max_inflight"), (long long)k->max_inflight);
    }
    in->cap = (size_t)k->max_inflight;
    in->reconnect_max_ms = k->reconnect_max < 100 ? 100 : k->reconnect_max;
    in->filters = k->topic.items;
    in->nfilters = k->topic.n;
    for (size_t i = 0; i < in->nfilters; i++) {
        if (!in->filters[i][0] || strlen(in->filters[i]) > 65535) {
            return gust_err_set(err, GUST_ECONFIG, "%s: topic #%zu is empty or too long",
                                h->cfg_where(cfg, "topic"), i + 1);
        }
    }
    return 0;
}

int mqtt_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    struct mqtt_in *in = calloc(1, sizeof(*in));
    int rc;

    if (!in) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    in->inst = inst;
    in->cfg = cfg;
    in->wake_fd = -1;
    pthread_mutex_init(&in->lock, NULL);
    if ((rc = gust_sdk_bind(mqtt_host, cfg, mqtt_in_schema, &in->k, err)) != 0 ||
        (rc = mqtt_conf_load(&in->conf, &in->k.common, cfg, mqtt_host->instance_name(inst), in->client_id,
                             sizeof(in->client_id), err)) != 0 ||
        (rc = load(in, cfg, err)) != 0) {
        mqtt_in_destroy(in);
        return rc;
    }
    if (!(in->ring = calloc(in->cap, sizeof(*in->ring))) || !(in->cq = calloc(in->cap, sizeof(*in->cq))) ||
        !(in->cq_local = calloc(in->cap, sizeof(*in->cq_local)))) {
        mqtt_in_destroy(in);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    /* No max_inflight of the publisher's own: the ring is the bound (max_inflight messages
     * read and not yet PUBACKed), and a full ring stops reading, not sending. */
    struct gust_publisher_conf pc = {.api = mqtt_host, .inst = inst, .max_inflight = 0};
    if ((rc = gust_publisher_create(&in->pub, &pc, err)) != 0) {
        mqtt_in_destroy(in);
        return rc;
    }
    *ctx = in;
    return 0;
}

/* After stop: nothing more is read; what is in flight gets its PUBACK if the bus stores it
 * within `timeout`; then DISCONNECT (the session stays, as clean session is off). */
static void drain(struct mqtt_in *in)
{
    int64_t deadline = gust_clock_mono_ms() + in->conf.timeout_ms;

    while (in->link.sock && gust_clock_mono_ms() < deadline) {
        in_ring_progress(in);
        if (in_conn_flush(in) != 0) {
            break;
        }
        if (gust_publisher_wait(in->pub, 0) == 0 && in->link.out.len == 0) {
            break;
        }
        struct pollfd p = {.fd = in->wake_fd, .events = POLLIN};
        uint64_t n;
        if (poll(&p, 1, 20) > 0 && read(in->wake_fd, &n, sizeof(n)) < 0) {
            /* nothing to do: the eventfd is only a wake-up */
        }
    }
    if (in->link.sock && mqtt_wire_disconnect(&in->link.out, in->version, MQTT_RC_SUCCESS) == 0) {
        in_conn_flush(in);
    }
    mqtt_link_close(&in->link);
}

static void *run(void *arg)
{
    struct mqtt_in *in = arg;

    in_network_thread = in;
    pthread_setname_np(pthread_self(), "mqtt_in"); /* for top -H and perf */
    mqtt_host->log(in->inst, GUST_LOG_INFO, "connecting to %s:%d%s as %s, QoS %d, MQTT %s", in->conf.host,
                   in->conf.port, in->tls ? " (TLS)" : "", in->conf.client_id, in->conf.qos, in->k.mqtt_version);
    while (!atomic_load(&in->stopping)) {
        int64_t now = gust_clock_mono_ms(), wait;
        if (!in->link.sock && now >= in->reconnect_at) {
            in_conn_connect(in);
        }
        in_ring_progress(in);
        if (in->link.sock) {
            in_conn_input(in);
        }
        wait = in_conn_timers(in, gust_clock_mono_ms());
        if (in->link.sock) {
            in_conn_flush(in);
        }
        if (in->nretry && wait > 50) {
            wait = 50;
        }
        if (in->self_woken) {
            in->self_woken = 0; /* set and read on this thread only: no lock */
            continue;           /* completions queued by this thread: handle them before sleeping */
        }

        int room = in->count < in->cap, sock = in->link.sock != NULL;
        struct pollfd p[2] = {{.fd = in->wake_fd, .events = POLLIN}};
        if (sock) {
            p[1].fd = gust_sock_fd(in->link.sock);
            p[1].events = (short)((room ? POLLIN : 0) |
                                  (in->link.out.len || gust_sock_wants_write(in->link.sock) ? POLLOUT : 0));
            if (room && gust_sock_buffered(in->link.sock)) {
                wait = 0;
            }
        }
        int n = poll(p, sock ? 2 : 1, (int)(wait < 0 ? 0 : wait));
        if (n < 0 && errno != EINTR) {
            mqtt_host->log(in->inst, GUST_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (n > 0 && (p[0].revents & POLLIN)) {
            uint64_t v;
            if (read(in->wake_fd, &v, sizeof(v)) < 0) {
                /* spurious: the eventfd is non-blocking */
            }
        }
        if (in->link.sock && room && ((n > 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) ||
                                      gust_sock_buffered(in->link.sock) || gust_sock_wants_write(in->link.sock))) {
            in_conn_read(in);
        } else if (in->link.sock && n > 0 && (p[1].revents & (POLLERR | POLLHUP))) {
            /* Reported even though not asked for: with a full ring, polling again would spin.
             * What was not read is not PUBACKed, so the broker sends it again. */
            in_conn_drop(in, "connection closed while the ring was full");
        }
    }
    drain(in);
    mqtt_host->log(in->inst, GUST_LOG_INFO,
                   "stopped: %" PRIu64 " received, %" PRIu64 " stored, %" PRIu64 " rejected, %" PRIu64
                   " wrapped, %" PRIu64 " QoS 0 lost to bus errors",
                   in->received, (uint64_t)atomic_load(&gust_publisher_counts(in->pub)->stored), in->rejected,
                   in->wrapped, in->lost);
    return NULL;
}

int mqtt_in_start(void *ctx, struct gust_err *err)
{
    struct mqtt_in *in = ctx;
    int rc;

    if ((rc = mqtt_conf_read_password(&in->conf, in->cfg, err)) != 0 ||
        (in->conf.tls && (rc = gust_tls_create(&in->tls, in->conf.tls_ca, in->conf.tls_cert,
                                              in->conf.tls_key, err)) != 0)) {
        return rc;
    }
    if (in->version == MQTT_V5 && !GUST_API_HAS(mqtt_host, publish_msg)) {
        return gust_err_set(err, GUST_EINVAL, "mqtt_version 5 needs publish_msg (ABI 1.4): it needs a newer gust");
    }
    if ((in->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        return gust_err_set(err, GUST_EIO, "eventfd: %s", strerror(errno));
    }
    mqtt_backoff_init(&in->backoff, 100, in->reconnect_max_ms);
    if (pthread_create(&in->thread, NULL, run, in) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the network thread");
    }
    in->running = 1;
    return 0;
}

void mqtt_in_stop(void *ctx)
{
    struct mqtt_in *in = ctx;
    uint64_t one = 1;

    if (!in->running) {
        return;
    }
    atomic_store(&in->stopping, 1);
    if (write(in->wake_fd, &one, sizeof(one)) < 0) {
        /* cannot fail on a fresh eventfd */
    }
    pthread_join(in->thread, NULL);
    in->running = 0;
}

void mqtt_in_destroy(void *ctx)
{
    struct mqtt_in *in = ctx;

    if (!in) {
        return;
    }
    mqtt_in_stop(in);
    /* Waits for the outcome of every publish (stored, refused, or timed out after
     * publish_timeout): on_stored writes into the entries and the eventfd. */
    gust_publisher_destroy(in->pub);
    for (size_t i = 0; in->ring && i < in->cap; i++) {
        free(in->ring[i].buf);
    }
    free(in->ring);
    free(in->cq);
    free(in->cq_local);
    mqtt_link_free(&in->link);
    gust_tls_destroy(in->tls);
    mqtt_conf_free(&in->conf);
    if (in->wake_fd >= 0) {
        close(in->wake_fd);
    }
    pthread_mutex_destroy(&in->lock);
    free(in);
}
