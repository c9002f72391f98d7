#include "nodes.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../bus/kv.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "bucket.h"

#define KEY_PREFIX "node."

struct gust_nodes {
    struct gust_nodes_conf conf;
    char self[128];
    char bucket[64];
    char key[240]; /* node.<self, in key characters>.<instance> */
    struct gust_bus *bus;
    struct gust_kv *kv;
    /* run_lock serialises KV calls; lock guards what /units reads and is never held
     * across I/O. Order: run_lock, then lock. */
    pthread_mutex_t run_lock;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    char config[GUST_DIGEST_LEN + 1];
    int write_failing; /* warned once until a write succeeds again */
    int twin_warned;   /* about a live peer with our node_name, once */
    struct gust_node peers[GUST_NODES_MAX];
    size_t npeers;
    int thread_started;
    int stopping;
    pthread_t thread;
};

/* Under run_lock. */
static int open_bucket(struct gust_nodes *n, char *why, size_t why_size)
{
    if (n->kv != NULL) {
        return 0;
    }
    return gust_kv_open(n->bus, n->bucket, n->conf.replicas, 2000, &n->kv, why, why_size);
}

/* Writes this process's entry. Under run_lock. */
static void write_entry(struct gust_nodes *n)
{
    char config[GUST_DIGEST_LEN + 1], why[256];
    pthread_mutex_lock(&n->lock);
    memcpy(config, n->config, sizeof(config));
    pthread_mutex_unlock(&n->lock);
    int rc = open_bucket(n, why, sizeof(why));
    if (rc == 0) {
        struct gust_entry e = *gust_self_entry();
        snprintf(e.holder, sizeof(e.holder), "%s", n->self);
        snprintf(e.config, sizeof(e.config), "%s", config);
        e.expires_ms = gust_clock_wall_ms() + n->conf.ttl_ms;
        struct gust_buf value = {0};
        uint64_t rev = 0;
        snprintf(why, sizeof(why), "out of memory");
        rc = gust_entry_write(&e, &value);
        rc = rc != 0 ? rc : gust_kv_put(n->kv, n->key, value.data, value.len, &rev, why, sizeof(why));
        gust_buf_free(&value);
    }
    if (rc != 0 && !n->write_failing) {
        gust_warn("cluster: cannot write %s in %s: %s; trying again every %" PRId64 " ms", n->key, n->bucket, why,
                  n->conf.ttl_ms / 3);
    } else if (rc == 0 && n->write_failing) {
        gust_info("cluster: %s written again", n->key);
    }
    n->write_failing = rc != 0;
}

struct peer_scan {
    struct gust_nodes *n;
    struct gust_node *out;
    size_t *count;
    int64_t now;
};

static void read_peer(void *ud, const char *key)
{
    struct peer_scan *ps = ud;
    struct gust_nodes *n = ps->n;
    char value[GUST_ENTRY_MAX], why[128];
    uint64_t rev = 0;
    if (*ps->count >= GUST_NODES_MAX || strncmp(key, KEY_PREFIX, sizeof(KEY_PREFIX) - 1) != 0 ||
        strcmp(key, n->key) == 0 || gust_kv_get(n->kv, key, value, sizeof(value), &rev, why, sizeof(why)) != 0) {
        return; /* not a node, ours, or gone meanwhile */
    }
    struct gust_node *p = &ps->out[*ps->count];
    struct gust_entry e;
    gust_entry_read(value, &e);
    if (e.expires_ms > ps->now && !gust_entry_gone(&e)) {
        snprintf(p->name, sizeof(p->name), "%s", e.holder);
        snprintf(p->config, sizeof(p->config), "%s", e.config);
        snprintf(p->host, sizeof(p->host), "%s", e.host);
        p->pid = e.pid;
        (*ps->count)++;
    }
}

/* Reads every live entry but ours into out. Under run_lock. */
static int read_peers(struct gust_nodes *n, struct gust_node *out, size_t *count, struct gust_err *err)
{
    *count = 0;
    char why[256];
    struct peer_scan ps = {n, out, count, gust_clock_wall_ms()};
    int rc = open_bucket(n, why, sizeof(why));
    if (rc == 0) {
        rc = gust_kv_keys(n->kv, read_peer, &ps, why, sizeof(why));
    }
    if (rc != 0) {
        return gust_err_set(err, GUST_EIO, "cannot read the node directory in %s: %s", n->bucket, why);
    }
    return 0;
}

/* Under run_lock: reads the peers into the table /units shows. */
static int refresh(struct gust_nodes *n, struct gust_err *err)
{
    struct gust_node *fresh = malloc(GUST_NODES_MAX * sizeof(*fresh));
    size_t count = 0;
    int rc = fresh != NULL ? read_peers(n, fresh, &count, err) : gust_err_set(err, GUST_ENOMEM, "out of memory");
    if (rc == 0) {
        pthread_mutex_lock(&n->lock);
        memcpy(n->peers, fresh, count * sizeof(*fresh));
        n->npeers = count;
        pthread_mutex_unlock(&n->lock);
    }
    free(fresh);
    return rc;
}

static void *nodes_thread(void *arg)
{
    struct gust_nodes *n = arg;
    pthread_mutex_lock(&n->lock);
    while (!n->stopping) {
        gust_wait_ms(&n->wake, &n->lock, n->conf.ttl_ms / 3);
        if (n->stopping) {
            break;
        }
        pthread_mutex_unlock(&n->lock);
        pthread_mutex_lock(&n->run_lock);
        write_entry(n);
        struct gust_err err;
        refresh(n, &err);
        pthread_mutex_unlock(&n->run_lock);
        pthread_mutex_lock(&n->lock);
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

int gust_nodes_create(const struct gust_nodes_conf *conf, struct gust_bus *bus, struct gust_nodes **out,
                      struct gust_err *err)
{
    struct gust_nodes *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    n->conf = *conf;
    n->bus = bus;
    snprintf(n->self, sizeof(n->self), "%s", conf->self);
    snprintf(n->bucket, sizeof(n->bucket), "%s", conf->bucket);
    n->conf.self = n->self;
    n->conf.bucket = n->bucket;
    /* One entry per process, not per node_name: two processes started with one name
     * do not overwrite each other's, and each sees the other. */
    snprintf(n->key, sizeof(n->key), KEY_PREFIX "%s", n->self);
    gust_key_safe(n->key + sizeof(KEY_PREFIX) - 1);
    size_t used = strlen(n->key);
    snprintf(n->key + used, sizeof(n->key) - used, ".%s", gust_self_entry()->instance);
    pthread_mutex_init(&n->run_lock, NULL);
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->wake, NULL);
    *out = n;
    return 0;
}

void gust_nodes_destroy(struct gust_nodes *n)
{
    if (n == NULL) {
        return;
    }
    pthread_mutex_lock(&n->lock);
    n->stopping = 1;
    pthread_cond_signal(&n->wake);
    int joined = n->thread_started;
    pthread_mutex_unlock(&n->lock);
    if (joined) {
        pthread_join(n->thread, NULL);
    }
    /* Only this process writes its key: a plain delete is safe. */
    if (n->kv != NULL) {
        gust_kv_delete(n->kv, n->key);
    }
    gust_kv_close(n->kv);
    pthread_cond_destroy(&n->wake);
    pthread_mutex_destroy(&n->lock);
    pthread_mutex_destroy(&n->run_lock);
    free(n);
}

void gust_nodes_advertise(struct gust_nodes *n, const char *digest)
{
    pthread_mutex_lock(&n->run_lock);
    pthread_mutex_lock(&n->lock);
    snprintf(n->config, sizeof(n->config), "%s", digest);
    pthread_mutex_unlock(&n->lock);
    write_entry(n);
    struct gust_err err;
    if (refresh(n, &err) != 0) {
        gust_warn("cluster: %s", err.msg);
    }
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < n->npeers; i++) {
        if (strcmp(n->peers[i].name, n->self) == 0 && !n->twin_warned) {
            /* The leases tell the two apart by instance, so singletons still run once;
             * but /units and the log would mix them up. */
            gust_warn("cluster: another process runs with node_name %s (host %s, pid %ld); give each process its "
                      "own node_name",
                      n->self, n->peers[i].host, n->peers[i].pid);
            n->twin_warned = 1;
        }
        if (strcmp(n->peers[i].config, digest) != 0) {
            gust_warn("cluster: this node runs units %s, peer %s runs %s: they handle events differently", digest,
                      n->peers[i].name, n->peers[i].config);
        }
    }
    if (!n->thread_started) {
        n->thread_started = pthread_create(&n->thread, NULL, nodes_thread, n) == 0;
    }
    pthread_mutex_unlock(&n->lock);
    pthread_mutex_unlock(&n->run_lock);
}

void gust_nodes_running(struct gust_nodes *n, char out[GUST_DIGEST_LEN + 1])
{
    pthread_mutex_lock(&n->lock);
    memcpy(out, n->config, GUST_DIGEST_LEN + 1);
    pthread_mutex_unlock(&n->lock);
}

int gust_nodes_peers(struct gust_nodes *n, struct gust_node *out, size_t *count, struct gust_err *err)
{
    pthread_mutex_lock(&n->run_lock);
    int rc = read_peers(n, out, count, err);
    pthread_mutex_unlock(&n->run_lock);
    return rc;
}

void gust_nodes_render_json(struct gust_nodes *n, struct gust_buf *out)
{
    pthread_mutex_lock(&n->lock);
    gust_buf_append(out, "{\"config\":", 10);
    gust_json_append_string(out, n->config, strlen(n->config));
    gust_buf_append(out, ",\"peers\":[", 10);
    for (size_t i = 0; i < n->npeers; i++) {
        gust_buf_printf(out, "%s{\"name\":", i > 0 ? "," : "");
        gust_json_append_string(out, n->peers[i].name, strlen(n->peers[i].name));
        gust_buf_append(out, ",\"config\":", 10);
        gust_json_append_string(out, n->peers[i].config, strlen(n->peers[i].config));
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "]}", 2);
    pthread_mutex_unlock(&n->lock);
}
