/* Connection state of one librdkafka handle. librdkafka reconnects by itself, with its
 * own backoff (reconnect.backoff.ms 100 ms doubling to reconnect.backoff.max.ms 10 s), so
 * there is no loop of ours to tame: what is ours is the log and the error /units shows.
 * A failure is logged once,
 * and again only when its reason changes; the recovery once. */
#include <stdio.h>
#include <string.h>

#include "kafka.h"

void kafka_link_init(struct kafka_link *l, struct gust_instance *inst, const char *shown)
{
    memset(l, 0, sizeof(*l));
    l->inst = inst;
    l->shown = shown;
    pthread_mutex_init(&l->mu, NULL);
}

void kafka_link_destroy(struct kafka_link *l)
{
    pthread_mutex_destroy(&l->mu);
}

void kafka_link_up(struct kafka_link *l)
{
    if (atomic_load(&l->connected) && !atomic_load(&l->troubled)) {
        return;
    }
    pthread_mutex_lock(&l->mu);
    if (!atomic_load(&l->connected)) {
        atomic_store(&l->connected, 1);
        kafka_host->log(l->inst, GUST_LOG_INFO, "%s kafka %s", l->was_up ? "reconnected to" : "connected to",
                        l->shown);
        l->was_up = 1;
        l->last_error[0] = '\0';
    }
    if (atomic_exchange(&l->troubled, 0)) {
        kafka_host->set_error(l->inst, NULL);
    }
    pthread_mutex_unlock(&l->mu);
}

void kafka_link_error(struct kafka_link *l, int down, const char *why)
{
    atomic_fetch_add(&l->errors, 1);
    pthread_mutex_lock(&l->mu);
    int was = atomic_load(&l->connected);
    if (down) {
        atomic_store(&l->connected, 0);
    }
    if (strcmp(why, l->last_error) != 0 || (down && was)) {
        kafka_host->log(l->inst, GUST_LOG_WARN, "kafka %s: %s%s", l->shown, why,
                        down ? " (librdkafka retries with backoff up to 10s)" : "");
        snprintf(l->last_error, sizeof(l->last_error), "%s", why);
    }
    kafka_host->set_error(l->inst, why);
    atomic_store(&l->troubled, 1);
    pthread_mutex_unlock(&l->mu);
}

void kafka_link_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_link *l = opaque;
    /* A single broker connection dropping is routine (idle connections are closed by the
     * broker; librdkafka reconnects): only all brokers gone, refused credentials or TLS,
     * and fatal errors change the state. */
    int down = err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
               err == RD_KAFKA_RESP_ERR__SSL || err == RD_KAFKA_RESP_ERR__FATAL;
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT) {
        atomic_fetch_add(&l->errors, 1);
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[256];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof(why));
        char line[400];
        snprintf(line, sizeof(line), "fatal: %s (%s)", why, rd_kafka_err2name(orig));
        kafka_link_error(l, 1, line);
        return;
    }
    kafka_link_error(l, down, reason);
}

void kafka_link_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    /* librdkafka's own lines (one per failed connect, say) would bypass the host's log
     * and say again what error_cb says once: they go to the debug level. */
    struct kafka_link *l = rd_kafka_opaque(rk);
    (void)level;
    if (l) {
        kafka_host->log(l->inst, GUST_LOG_DEBUG, "librdkafka %s: %s", fac, buf);
    }
}
