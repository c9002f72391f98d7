/* kafka_in: Kafka topics read with a consumer group, published to the bus before their
 * offsets are committed.
 *
 *   source kin { use kafka_in; brokers 127.0.0.1:9092; topics in other; group gust; subject ev.kafka; }
 *
 * One thread per instance owns the consumer (librdkafka's high-level consumer: group
 * membership, rebalances and heartbeats are its own threads' business; every callback
 * we register runs inside rd_kafka_consumer_poll, on this thread):
 *   1. each message is published with Nats-Msg-Id "<topic>:<partition>:<offset>" and its
 *      headers (kafka_payload.c), and tracked in its partition (kafka_track.c);
 *   2. its PubAck (a host thread) marks it stored;
 *   3. every 100 ms the stored prefix of each partition is committed (rd_kafka_commit of
 *      explicit offsets; enable.auto.commit and enable.auto.offset.store are off).
 * A process killed between the PubAck and the commit reads those messages again, and
 * JetStream stores each once (same Nats-Msg-Id, within the stream's duplicate window).
 * A publish that fails stops its partition's commits at that offset: once every publish
 * in flight has its outcome, the partition is sought back to it and read again after a
 * pause. On a rebalance, the partitions taken away are drained first (every outcome
 * back, their stored prefix committed) before librdkafka hands them to another member. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gust/source.h"
#include "kafka.h"

struct kafka_in_keys {
    struct kafka_keys common;
    struct gust_list topics;
    const char *group, *subject, *start, *non_json;
    int64_t max_inflight;
};

#define KEY(f, T, def, flags, help) GUST_KEY(struct kafka_in_keys, f, T, def, flags, help)
const struct gust_schema_key kafka_in_schema[] = {
    KAFKA_COMMON_KEYS(struct kafka_in_keys),
    KEY(topics, LIST, NULL, GUST_K_REQUIRED, "the topics to read"),
    KEY(group, STR, NULL, GUST_K_REQUIRED, "consumer group (group.id): the processes of a group share the partitions"),
    KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "publish every message to this subject"),
    GUST_KEY_ENUM(struct kafka_in_keys, start, "earliest", 0, "earliest|latest",
                  "where a group without a committed offset starts: the first message or new ones only"),
    GUST_KEY_ENUM(struct kafka_in_keys, non_json, "reject", 0, "reject|wrap|pass",
                  "a value that is not one JSON object: reject (counted, logged, committed), wrap "
                  "({\"payload_base64\",\"topic\",\"partition\",\"offset\"}) or pass (unchanged)"),
    GUST_KEY_RANGE(struct kafka_in_keys, max_inflight, INT, "1024", 0, 1, 100000,
                   "messages published and not yet stored, at most"),
    GUST_KEY_END,
};

/* Set by kafka_in; the delivery guarantee depends on them. */
static const char *const owned[] = {"group.id", "bootstrap.servers", "enable.auto.commit",
                                    "enable.auto.offset.store", "auto.offset.reset", NULL};

struct kafka_in {
    struct kafka_link link; /* first: librdkafka's opaque */
    struct gust_instance *inst;
    struct kafka_in_keys k;
    rd_kafka_conf_t *conf; /* until start hands it to rd_kafka_new */
    rd_kafka_t *rk;
    struct gust_publisher *pub;
    char shown[512];
    int non_json;

    pthread_t thread;
    int running;
    atomic_int stopping;

    /* The thread's own. */
    struct kafka_track track;
    int rewind;
    int64_t next_commit, next_lag, next_probe;
    struct gust_buf json, hstore;
    char msg_id[400];
    atomic_uint_fast64_t read, committed, rejected, failed, rebalances, lag, assigned, hdr_skipped;
};

int kafka_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = kafka_host;
    struct kafka_in *in = calloc(1, sizeof(*in));
    int rc;

    if (!in) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    in->inst = inst;
    kafka_link_init(&in->link, inst, in->shown);
    if ((rc = gust_sdk_bind(h, cfg, kafka_in_schema, &in->k, err)) != 0) {
        kafka_in_destroy(in);
        return rc;
    }
    if (!in->k.group[0]) {
        kafka_in_destroy(in);
        return gust_err_set(err, GUST_ECONFIG, "%s: group: must not be empty", h->cfg_where(cfg, "group"));
    }
    for (size_t i = 0; i < in->k.topics.n; i++) {
        const char *t = in->k.topics.items[i];
        if (!t[0] || strlen(t) > 249 || strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                                            strlen(t)) {
            kafka_in_destroy(in);
            return gust_err_set(err, GUST_ECONFIG,
                                "%s: topics: \"%s\" is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)",
                                h->cfg_where(cfg, "topics"), t);
        }
    }
    in->non_json = strcmp(in->k.non_json, "wrap") == 0   ? KAFKA_NJ_WRAP
                   : strcmp(in->k.non_json, "pass") == 0 ? KAFKA_NJ_PASS
                                                         : KAFKA_NJ_REJECT;
    /* session.timeout.ms 10 s: a process killed with -9 hands its partitions over within
     * about 10 s (librdkafka's default is 45 s); `rdkafka.session.timeout.ms N;` overrides. */
    const char *defaults[] = {"session.timeout.ms", "10000", NULL};
    if ((rc = kafka_conf_build(&in->k.common, cfg, defaults, owned, &in->conf, in->shown, sizeof(in->shown),
                               err)) != 0) {
        kafka_in_destroy(in);
        return rc;
    }
    struct gust_err e = {{0}};
    if ((rc = kafka_conf_set(in->conf, "group.id", in->k.group, &e)) != 0 ||
        (rc = kafka_conf_set(in->conf, "enable.auto.commit", "false", &e)) != 0 ||
        (rc = kafka_conf_set(in->conf, "enable.auto.offset.store", "false", &e)) != 0 ||
        (rc = kafka_conf_set(in->conf, "auto.offset.reset", in->k.start, &e)) != 0) {
        kafka_in_destroy(in);
        return gust_err_set(err, rc, "%s: %s", h->cfg_where(cfg, "group"), e.msg);
    }
    *ctx = in;
    return 0;
}

/* A bus thread: only records the outcome; the consumer thread does the rest. */
static void on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    struct kafka_tracked *t = ud;
    (void)seq;
    (void)error;
    atomic_store(&t->state, status == 0 || status == 1 ? KAFKA_STORED : KAFKA_FAILED);
}

/* Every publish in flight has its outcome (the host answers each within
 * publish_timeout, so this ends). */
static void drain(struct kafka_in *in)
{
    while (gust_publisher_wait(in->pub, 1000) > 0) {
    }
}

static void commit(struct kafka_in *in, int sync)
{
    rd_kafka_topic_partition_list_t *l = kafka_track_to_commit(&in->track);
    if (!l) {
        return;
    }
    rd_kafka_resp_err_t e = rd_kafka_commit(in->rk, l, !sync);
    if (sync && e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        char why[300];
        snprintf(why, sizeof(why), "offset commit: %s (read again, stored once)", rd_kafka_err2str(e));
        kafka_link_error(&in->link, 0, why);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Moves every partition's stored prefix; notes a failed head for a rewind. */
static void advance(struct kafka_in *in)
{
    for (struct kafka_part *p = in->track.parts; p; p = p->next) {
        if (kafka_track_advance(p)) {
            in->rewind = 1;
        }
    }
}

/* After a failed publish: every outcome back, the stored prefix committed, and each
 * partition whose head failed read again from there, after a pause (the bus is in
 * trouble: nothing is buffered meanwhile). */
static void rewind_failed(struct kafka_in *in)
{
    rd_kafka_topic_partition_list_t *seek = rd_kafka_topic_partition_list_new(4);

    drain(in);
    for (struct kafka_part *p = in->track.parts; p; p = p->next) {
        if (kafka_track_advance(p) && seek) {
            rd_kafka_topic_partition_list_add(seek, p->topic, p->partition)->offset = p->head->offset;
        }
        kafka_track_clear(p);
    }
    commit(in, 1);
    if (seek && seek->cnt > 0) {
        kafka_host->log(in->inst, GUST_LOG_WARN,
                        "publishing failed: %d partition(s) read again from the first message not stored, in 1 s",
                        seek->cnt);
        rd_kafka_error_t *e = rd_kafka_seek_partitions(in->rk, seek, 5000);
        if (e) {
            kafka_link_error(&in->link, 0, rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
    }
    if (seek) {
        rd_kafka_topic_partition_list_destroy(seek);
    }
    in->rewind = 0;
    for (int i = 0; i < 10 && !atomic_load(&in->stopping); i++) {
        usleep(100000);
    }
}

static void note_rejected(struct kafka_in *in, const rd_kafka_message_t *m)
{
    uint64_t n = atomic_fetch_add(&in->rejected, 1) + 1;
    if (n == 1 || n % 1000 == 0) {
        kafka_host->log(in->inst, GUST_LOG_WARN,
                        "message %s:%" PRId32 ":%" PRId64
                        " is not one JSON object: rejected and committed (non_json reject; %" PRIu64 " so far)",
                        rd_kafka_topic_name(m->rkt), m->partition, (int64_t)m->offset, n);
    }
}

static void handle(struct kafka_in *in, const rd_kafka_message_t *m)
{
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            char why[400];
            snprintf(why, sizeof(why), "%s%s%s", m->rkt ? rd_kafka_topic_name(m->rkt) : "",
                     m->rkt ? ": " : "", rd_kafka_message_errstr(m));
            kafka_link_error(&in->link, 0, why);
        }
        return;
    }
    kafka_link_up(&in->link);
    atomic_fetch_add(&in->read, 1);
    const char *topic = rd_kafka_topic_name(m->rkt);
    struct kafka_part *p = kafka_track_part(&in->track, topic, m->partition);
    struct kafka_tracked *t = p ? kafka_track_add(p, m->offset) : NULL;
    if (!t) {
        atomic_fetch_add(&in->failed, 1);
        in->rewind = 1;
        return;
    }
    int rc = kafka_payload_json(m, in->non_json, &in->json);
    if (rc == 1) {
        note_rejected(in, m);
        atomic_store(&t->state, KAFKA_STORED); /* done with: committed with the rest */
        return;
    }
    if (rc != 0) {
        atomic_store(&t->state, KAFKA_FAILED);
        atomic_fetch_add(&in->failed, 1);
        return;
    }
    struct gust_header hdr[KAFKA_HEADERS_MAX];
    size_t skipped;
    rd_kafka_headers_t *kh = NULL;
    if (rd_kafka_message_headers(m, &kh) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        kh = NULL;
    }
    size_t nh = kafka_payload_headers(m, kh, &in->hstore, hdr, &skipped);
    if (skipped) {
        atomic_fetch_add(&in->hdr_skipped, skipped);
    }
    snprintf(in->msg_id, sizeof(in->msg_id), "%s:%" PRId32 ":%" PRId64, topic, m->partition, (int64_t)m->offset);
    const struct gust_pub_msg pm = {.subject = in->k.subject,
                                    .data = in->json.data,
                                    .len = in->json.len,
                                    .msg_id = in->msg_id,
                                    .headers = hdr,
                                    .nheaders = nh};
    /* A bus that stays busy 30 s: this message fails and its partition is read again. */
    rc = gust_publisher_send_msg(in->pub, &pm, gust_clock_mono_ms() + 30000, on_stored, t);
    if (rc != 0) {
        atomic_store(&t->state, KAFKA_FAILED);
        atomic_fetch_add(&in->failed, 1);
    }
}

static void log_parts(struct kafka_in *in, const char *what, const rd_kafka_topic_partition_list_t *parts)
{
    char list[400] = "";
    size_t used = 0;
    for (int i = 0; i < parts->cnt && used < sizeof(list) - 1; i++) {
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s[%" PRId32 "]", i ? " " : "",
                                 parts->elems[i].topic, parts->elems[i].partition);
    }
    kafka_host->log(in->inst, GUST_LOG_INFO, "%s %d partition(s): %s", what, parts->cnt, parts->cnt ? list : "-");
}

/* On the consumer thread, inside rd_kafka_consumer_poll. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque)
{
    struct kafka_in *in = opaque;
    const char *protocol = rd_kafka_rebalance_protocol(rk);
    int cooperative = protocol && strcmp(protocol, "COOPERATIVE") == 0;
    rd_kafka_error_t *e = NULL;

    atomic_fetch_add(&in->rebalances, 1);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        kafka_link_up(&in->link);
        for (int i = 0; i < parts->cnt; i++) {
            kafka_track_part(&in->track, parts->elems[i].topic, parts->elems[i].partition);
        }
        log_parts(in, "assigned", parts);
        if (cooperative) {
            e = rd_kafka_incremental_assign(rk, parts);
        } else {
            rd_kafka_assign(rk, parts);
        }
    } else {
        /* Revoked (or lost): what was read of these partitions is published and stored
         * or failed before another member may read them; the stored prefix is committed,
         * unless the assignment was lost (another member may own it already: an old
         * commit would move its offset back). */
        int lost = rd_kafka_assignment_lost(rk);
        drain(in);
        for (int i = 0; i < parts->cnt; i++) {
            struct kafka_part *p = kafka_track_part(&in->track, parts->elems[i].topic, parts->elems[i].partition);
            if (p) {
                kafka_track_advance(p);
            }
        }
        if (!lost) {
            commit(in, 1);
        }
        for (int i = 0; i < parts->cnt; i++) {
            struct kafka_part *p = kafka_track_part(&in->track, parts->elems[i].topic, parts->elems[i].partition);
            if (p) {
                kafka_track_remove(&in->track, p);
            }
        }
        log_parts(in, lost ? "lost" : "revoked", parts);
        if (cooperative) {
            e = rd_kafka_incremental_unassign(rk, parts);
        } else {
            rd_kafka_assign(rk, NULL);
        }
    }
    if (e) {
        kafka_link_error(&in->link, 0, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    uint64_t n = 0;
    for (struct kafka_part *p = in->track.parts; p; p = p->next) {
        n++;
    }
    atomic_store(&in->assigned, n);
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
                      void *opaque)
{
    struct kafka_in *in = opaque;
    (void)rk;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
        return;
    }
    if (err) {
        char why[300];
        snprintf(why, sizeof(why), "offset commit: %s (read again after a restart, stored once)",
                 rd_kafka_err2str(err));
        kafka_link_error(&in->link, 0, why);
        return;
    }
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        if (!offsets->elems[i].err) {
            atomic_fetch_add(&in->committed, 1);
        }
    }
}

/* Messages left per assigned partition: the high watermark librdkafka last saw (no
 * request) minus our position. */
static void update_lag(struct kafka_in *in)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
    uint64_t lag = 0;
    if (!l) {
        return;
    }
    for (struct kafka_part *p = in->track.parts; p; p = p->next) {
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
    }
    if (l->cnt > 0 && rd_kafka_position(in->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo, hi;
            /* A position not known yet (nothing fetched) counts nothing rather than a guess. */
            int64_t pos = l->elems[i].offset;
            if (pos >= 0 &&
                rd_kafka_get_watermark_offsets(in->rk, l->elems[i].topic, l->elems[i].partition, &lo, &hi) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR &&
                hi > pos) {
                lag += (uint64_t)(hi - pos);
            }
        }
    }
    atomic_store(&in->lag, lag);
    rd_kafka_topic_partition_list_destroy(l);
}

/* While the link is down and no message proves it back (an idle topic), a metadata
 * request every 3 s does (at most 1 s of this thread's time). */
static void probe(struct kafka_in *in, int64_t now)
{
    const struct rd_kafka_metadata *md = NULL;
    if (atomic_load(&in->link.connected) || now < in->next_probe) {
        return;
    }
    in->next_probe = now + 3000;
    if (rd_kafka_metadata(in->rk, 0, NULL, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        kafka_link_up(&in->link);
    }
    if (md) {
        rd_kafka_metadata_destroy(md);
    }
}

static void *in_thread(void *arg)
{
    struct kafka_in *in = arg;

    while (!atomic_load(&in->stopping)) {
        if (in->rewind) {
            rewind_failed(in);
            continue;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(in->rk, 100);
        if (m) {
            handle(in, m);
            rd_kafka_message_destroy(m);
        }
        int64_t now = gust_clock_mono_ms();
        if (now >= in->next_commit) {
            advance(in);
            if (!in->rewind) {
                commit(in, 0);
            }
            in->next_commit = now + 100;
        }
        if (now >= in->next_lag) {
            update_lag(in);
            in->next_lag = now + 1000;
            probe(in, now);
        }
    }
    /* Stopping: what is in flight gets its outcome, the stored prefix is committed, and
     * closing the consumer leaves the group (its revoke runs on_rebalance once more). */
    drain(in);
    advance(in);
    commit(in, 1);
    rd_kafka_consumer_close(in->rk);
    return NULL;
}

int kafka_in_start(void *ctx, struct gust_err *err)
{
    struct kafka_in *in = ctx;
    struct gust_publisher_conf pc = {
        .api = kafka_host, .inst = in->inst, .max_inflight = (size_t)in->k.max_inflight};
    char why[512];

    if (!GUST_API_HAS(kafka_host, publish_msg)) {
        return gust_err_set(err, GUST_EINVAL, "this host has no publish_msg (ABI 1.4): it needs a newer gust");
    }
    int rc = gust_publisher_create(&in->pub, &pc, err);
    if (rc != 0) {
        return rc;
    }
    rd_kafka_conf_set_opaque(in->conf, in);
    rd_kafka_conf_set_error_cb(in->conf, kafka_link_error_cb);
    rd_kafka_conf_set_log_cb(in->conf, kafka_link_log_cb);
    rd_kafka_conf_set_rebalance_cb(in->conf, on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(in->conf, on_commit);
    in->rk = rd_kafka_new(RD_KAFKA_CONSUMER, in->conf, why, sizeof(why));
    if (!in->rk) {
        return gust_err_set(err, GUST_EINVAL, "librdkafka: %s", why);
    }
    in->conf = NULL; /* rd_kafka_new owns it now */
    rd_kafka_poll_set_consumer(in->rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new((int)in->k.topics.n);
    for (size_t i = 0; i < in->k.topics.n; i++) {
        rd_kafka_topic_partition_list_add(topics, in->k.topics.items[i], RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t e = rd_kafka_subscribe(in->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e) {
        return gust_err_set(err, GUST_EINVAL, "subscribe: %s", rd_kafka_err2str(e));
    }
    kafka_host->log(in->inst, GUST_LOG_INFO, "reading %zu topic(s) of kafka %s in group %s (start %s)",
                    in->k.topics.n, in->shown, in->k.group, in->k.start);
    if (pthread_create(&in->thread, NULL, in_thread, in) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start a thread");
    }
    in->running = 1;
    return 0;
}

size_t kafka_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct kafka_in *in = ctx;
    const struct gust_pub_counts *pc = in->pub ? gust_publisher_counts(in->pub) : NULL;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&in->link.connected)},
        {"read", (uint64_t)atomic_load(&in->read)},
        {"stored", pc ? (uint64_t)atomic_load(&pc->stored) : 0},
        {"commits", (uint64_t)atomic_load(&in->committed)},
        {"rejected", (uint64_t)atomic_load(&in->rejected)},
        {"publish_failed", (uint64_t)atomic_load(&in->failed) + (pc ? (uint64_t)atomic_load(&pc->failed) : 0)},
        {"partitions", (uint64_t)atomic_load(&in->assigned)},
        {"lag", (uint64_t)atomic_load(&in->lag)},
        {"rebalances", (uint64_t)atomic_load(&in->rebalances)},
        {"headers_skipped", (uint64_t)atomic_load(&in->hdr_skipped)},
        {"errors", (uint64_t)atomic_load(&in->link.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void kafka_in_stop(void *ctx)
{
    struct kafka_in *in = ctx;
    if (!in->running) {
        return;
    }
    atomic_store(&in->stopping, 1);
    gust_publisher_stop(in->pub);
    pthread_join(in->thread, NULL);
    in->running = 0;
    kafka_host->log(in->inst, GUST_LOG_INFO,
                    "stopped: %" PRIu64 " messages read, %" PRIu64 " offsets committed, %" PRIu64
                    " rejected (not JSON), %" PRIu64 " publishes failed (read again)",
                    (uint64_t)atomic_load(&in->read), (uint64_t)atomic_load(&in->committed),
                    (uint64_t)atomic_load(&in->rejected), (uint64_t)atomic_load(&in->failed));
}

void kafka_in_destroy(void *ctx)
{
    struct kafka_in *in = ctx;
    kafka_in_stop(in);
    if (in->rk) {
        rd_kafka_destroy(in->rk);
    }
    if (in->conf) {
        rd_kafka_conf_destroy(in->conf);
    }
    gust_publisher_destroy(in->pub);
    kafka_track_free(&in->track);
    gust_buf_free(&in->json);
    gust_buf_free(&in->hstore);
    kafka_link_destroy(&in->link);
    free(in);
}
