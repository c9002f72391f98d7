/* libFuzzer target: mqtt_in's session (plugins/mqtt: mqtt_link.c, mqtt_in_conn.c,
 * mqtt_in_ring.c, mqtt_wire.c, mqtt_props.c, with the SDK's publisher) on any bytes a
 * broker could send: CONNACK, SUBACK, PUBLISH at every QoS, PUBREL, PINGRESP,
 * DISCONNECT, and whatever else, in MQTT 3.1.1 or 5.0 (properties everywhere). The
 * first bytes choose the settings (QoS, non_json, chunk size, protocol version, whether
 * the bus stores or refuses); the rest is the broker's stream, over as many connections as it lasts (each
 * drop reconnects and reads on). The input buffer stays within max_packet and what a
 * turn reads; every packet gust writes is well formed, and every PUBACK, PUBREC or
 * PUBCOMP it writes names a packet id (and, in 5.0, a reason code); every header a
 * publish carries is a NUL-terminated name and value without a line break. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_in.h"
#include "stub_sock.h"

const struct gust_host_api *mqtt_host;
static int refuse_every; /* the bus refuses every Nth publish (0: never) */
static unsigned published;

static void fake_log(const struct gust_instance *inst, int level, const char *fmt, ...)
{
    (void)inst, (void)level, (void)fmt;
}

static const char *fake_name(const struct gust_instance *inst)
{
    (void)inst;
    return "source:fuzz";
}

static int fake_publish(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                        gust_publish_done_fn done, void *ud)
{
    (void)inst, (void)subject, (void)data, (void)len;
    published++;
    if (refuse_every && published % (unsigned)refuse_every == 0) {
        return GUST_EAGAIN;
    }
    done(ud, 0, published, NULL);
    return 0;
}

/* The headers of a 5.0 publish: a token name, a value with no line break. */
static int fake_publish_msg(struct gust_instance *inst, const struct gust_pub_msg *m,
                            gust_publish_done_fn done, void *ud)
{
    for (size_t i = 0; i < m->nheaders; i++) {
        const char *n = m->headers[i].name, *v = m->headers[i].value;
        if (!n[0] || strpbrk(n, ": \r\n") || strpbrk(v, "\r\n")) {
            abort();
        }
    }
    return fake_publish(inst, m->subject, m->data, m->len, done, ud);
}

static void fake_set_error(struct gust_instance *inst, const char *text)
{
    (void)inst, (void)text;
}

static const struct gust_host_api api = {
    .struct_size = sizeof(struct gust_host_api),
    .log = fake_log,
    .instance_name = fake_name,
    .publish = fake_publish,
    .publish_msg = fake_publish_msg,
    .set_error = fake_set_error,
};

static const char *filters[] = {"a/#", "b/+/c"};
static const char *keep[] = {"x-a", "Content-Type"};
static int version;

/* Every packet gust wrote parses, and the acks carry an id. */
static void check_written(void)
{
    size_t off = 0;
    struct mqtt_packet p;
    long n;
    while ((n = mqtt_wire_next(stub_sock_written + off, stub_sock_written_len - off, MQTT_MAX_PACKET, &p)) >
           0) {
        if ((p.type == MQTT_PUBACK || p.type == MQTT_PUBREC || p.type == MQTT_PUBCOMP) &&
            (p.body_len != (version == MQTT_V5 ? 3u : 2u) || (p.body[0] == 0 && p.body[1] == 0))) {
            abort();
        }
        off += (size_t)n;
    }
    if (n < 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) {
        return 0;
    }
    mqtt_host = &api;
    struct mqtt_in *in = calloc(1, sizeof(*in));
    in->conf.qos = data[0] & 1;
    snprintf(in->conf.host, sizeof(in->conf.host), "broker.fuzz");
    in->conf.port = 1883;
    in->conf.client_id = "gust-fuzz";
    in->conf.keepalive_s = 1 + (data[0] >> 4);
    in->conf.timeout_ms = 500;
    in->non_json = (data[0] >> 1) % 3;
    if (data[0] & 8) {
        in->subject = "ev.fuzz";
    } else {
        in->prefix = "ev.mqtt";
    }
    in->max_payload = 16 + data[1];
    in->reconnect_max_ms = 1000;
    in->filters = filters;
    in->nfilters = 2;
    in->cap = 1 + (data[2] & 7);
    version = in->version = data[2] & 8 ? MQTT_V5 : MQTT_V311;
    in->k.headers = (struct gust_list){keep, 2};
    refuse_every = data[2] >> 5;
    published = 0;
    in->ring = calloc(in->cap, sizeof(*in->ring));
    in->cq = calloc(in->cap, sizeof(*in->cq));
    in->cq_local = calloc(in->cap, sizeof(*in->cq_local));
    in->wake_fd = -1;
    pthread_mutex_init(&in->lock, NULL);
    if (gust_publisher_create(&in->pub, &(struct gust_publisher_conf){.api = &api}, NULL) != 0) {
        abort();
    }
    mqtt_backoff_init(&in->backoff, 100, in->reconnect_max_ms);
    in_network_thread = in;
    stub_sock_feed(data + 3, size - 3, 1 + (data[1] & 31) * 7);

    for (int turn = 0; turn < 20000; turn++) {
        int64_t now = gust_clock_mono_ms();
        if (!in->link.sock) {
            if (!stub_sock_left()) {
                break;
            }
            in->reconnect_at = 0;
            in_conn_connect(in);
            continue;
        }
        in_ring_progress(in);
        in_conn_input(in);
        in_conn_timers(in, now);
        in_conn_flush(in);
        if (in->link.sock && in->count < in->cap) {
            in_conn_read(in);
        }
        if (in->link.rcap > in_conn_max_packet(in) + 6 * 65536) {
            abort(); /* the input buffer is bounded */
        }
        if (!stub_sock_left() && in->link.sock && in->count == 0) {
            in_conn_read(in); /* reads EOF: the drop */
        }
    }
    check_written();
    in_network_thread = NULL;
    for (size_t i = 0; i < in->cap; i++) {
        free(in->ring[i].buf);
    }
    mqtt_link_free(&in->link);
    gust_publisher_destroy(in->pub);
    free(in->ring);
    free(in->cq);
    free(in->cq_local);
    pthread_mutex_destroy(&in->lock);
    free(in);
    return 0;
}
