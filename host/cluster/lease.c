#include "lease.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bus/bus.h"
#include "../bus/kv.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "bucket.h"

/* Leases spread over the processes attached to them (task.group). Each such process
 * keeps an entry want.<group>.<self> in the bucket, renewed like a lease and deleted when
 * it leaves; it takes a free lease of the group only while it holds fewer than its
 * share, ceil(size / members), and gives one back per round while it holds more (a peer
 * joined or came back), so the group settles with every process at its share. */
struct group {
    char name[96];
    char want_key[320];  /* want.<group>.<self>.<instance> */
    size_t prefix_len;   /* of want.<group>., which every member's key starts with */
    uint32_t size;
    uint32_t members;      /* live entries as last counted, this process's included; 0: not yet */
    int64_t count_at_wall; /* count again then: our entry's renewal, or a counted peer's expiry */
};

struct lease {
    struct group *group; /* NULL: a lone task */
    char name[80]; /* what /units and the log call it: a source's unit name, ... */
    char key[96];  /* its key in the bucket: "source.<name>", "detect.<unit>.<slice>" */
    struct gust_lease_task task;
    int attached;   /* a generation wants it run */
    int held;       /* this process holds the lease, at revision rev */
    int running;    /* task started */
    uint64_t rev;
    int64_t renew_at;    /* monotonic ms */
    int64_t valid_until; /* monotonic ms: past it, the lease may be someone else's */
    int64_t next_try;    /* monotonic ms: next acquisition attempt */
    int64_t backoff_ms;  /* after a failed start */
    /* as last seen in the bucket, for /units (under the state lock) */
    char holder[128];
    int64_t expires_ms;
};

struct gust_leases {
    struct gust_lease_conf conf;
    char self[128];
    char bucket[64];
    struct gust_bus *bus;
    struct gust_kv *kv;
    int bucket_warned;
    /* run_lock serialises KV calls and task start/stop; lock guards the list and what
     * /units reads, and is never held across I/O. Order: run_lock, then lock. */
    pthread_mutex_t run_lock;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct lease **v;
    size_t n;
    struct group **groups;
    size_t ngroups;
    int thread_started;
    int stopping;
    pthread_t thread;
};

/* An entry naming this process as holder until expires_ms, into out (emptied first);
 * holding 0: a given-back lease, which names no one. 0 or GUST_ENOMEM. */
static int format_value(struct gust_buf *out, const struct gust_leases *l, int holding, int64_t expires_ms)
{
    struct gust_entry e = {0};
    if (holding) {
        e = *gust_self_entry();
        snprintf(e.holder, sizeof(e.holder), "%s", l->self);
    }
    e.expires_ms = expires_ms;
    out->len = 0;
    return gust_entry_write(&e, out);
}

/* Whether e names this very process: its instance, not only its node_name, which a
 * second process started with the same node_name (or this one's predecessor, killed
 * -9) shares. */
static int is_self(const struct gust_entry *e)
{
    return e->instance[0] != '\0' && strcmp(e->instance, gust_self_entry()->instance) == 0;
}

/* held and running are written under both locks (run_lock by the caller), so /units
 * may read them under lock alone. */
static void set_state(struct gust_leases *l, struct lease *e, int held, int running)
{
    pthread_mutex_lock(&l->lock);
    e->held = held;
    e->running = running;
    pthread_mutex_unlock(&l->lock);
}

static void set_seen(struct gust_leases *l, struct lease *e, const char *holder, int64_t expires_ms)
{
    pthread_mutex_lock(&l->lock);
    snprintf(e->holder, sizeof(e->holder), "%s", holder);
    e->expires_ms = expires_ms;
    pthread_mutex_unlock(&l->lock);
}

/* Binds (or makes) the bucket. Under run_lock. */
static int ensure_bucket(struct gust_leases *l)
{
    if (l->kv != NULL) {
        return 0;
    }
    /* A KV call must fail well before the lease it renews runs out. */
    int64_t wait = l->conf.ttl_ms / 4 < 2000 ? l->conf.ttl_ms / 4 : 2000;
    char why[256];
    if (gust_kv_open(l->bus, l->bucket, l->conf.replicas, wait, &l->kv, why, sizeof(why)) != 0) {
        if (!l->bucket_warned) {
            gust_warn("leases: cannot open KV bucket %s: %s; singleton tasks wait", l->bucket, why);
            l->bucket_warned = 1;
        }
        return GUST_EIO;
    }
    if (l->bucket_warned) {
        gust_info("leases: KV bucket %s open", l->bucket);
        l->bucket_warned = 0;
    }
    return 0;
}

static void took(struct gust_leases *l, struct lease *e, uint64_t rev, int64_t now, int64_t expires)
{
    set_state(l, e, 1, e->running);
    e->rev = rev;
    e->renew_at = now + l->conf.ttl_ms / 3;
    pthread_mutex_lock(&l->lock); /* gust_leases_holding reads it */
    e->valid_until = now + l->conf.ttl_ms;
    pthread_mutex_unlock(&l->lock);
    set_seen(l, e, l->self, expires);
}

/* Takes the lease if it is free, expired, or ours already (a reload, a renewal that
 * timed out but went through). Under run_lock. */
static void try_acquire(struct gust_leases *l, struct lease *e, int64_t now)
{
    struct gust_buf value = {0};
    int64_t expires = gust_clock_wall_ms() + l->conf.ttl_ms;
    uint64_t rev = 0, seen_rev = 0;
    char why[256], current[GUST_ENTRY_MAX];
    struct gust_entry seen;
    if (format_value(&value, l, 1, expires) != 0) {
        goto done;
    }
    if (gust_kv_create(l->kv, e->key, value.data, value.len, &rev, why, sizeof(why)) == 0) {
        took(l, e, rev, now, expires);
        goto done;
    }
    if (gust_kv_get(l->kv, e->key, current, sizeof(current), &seen_rev, why, sizeof(why)) != 0) {
        goto done; /* deleted in between, or the bus is away: next poll */
    }
    gust_entry_read(current, &seen);
    set_seen(l, e, seen.holder, seen.expires_ms);
    /* Someone else's and still valid: wait, even when it bears our node_name (a twin),
     * unless its writer is gone for sure (this process's predecessor killed -9, on this
     * machine); else its entry runs out after the TTL. */
    if (!is_self(&seen) && seen.expires_ms > gust_clock_wall_ms() && !gust_entry_gone(&seen)) {
        goto done;
    }
    if (!is_self(&seen) && seen.expires_ms > gust_clock_wall_ms()) {
        gust_info("lease %s: its holder %s (pid %ld) is gone: taken over before its TTL", e->key, seen.holder,
                  seen.pid);
    }
    if (gust_kv_update(l->kv, e->key, value.data, value.len, seen_rev, &rev, why, sizeof(why)) == 0) {
        took(l, e, rev, now, expires);
    }
done:
    gust_buf_free(&value);
}

static void stop_task(struct gust_leases *l, struct lease *e)
{
    if (e->running) {
        e->task.stop(e->task.ud);
        set_state(l, e, e->held, 0);
    }
}

/* Writes an expired value by compare-and-set, so a peer takes over at its next poll.
 * (nats.c 3.4's delete has no revision check: a blind delete could free a lease a
 * peer took a moment ago.) Under run_lock. */
static void give_back(struct gust_leases *l, struct lease *e)
{
    if (!e->held) {
        return;
    }
    set_state(l, e, 0, e->running);
    struct gust_buf value = {0};
    uint64_t rev = 0;
    char why[256];
    if (l->kv != NULL && format_value(&value, l, 0, 0) == 0 &&
        gust_kv_update(l->kv, e->key, value.data, value.len, e->rev, &rev, why, sizeof(why)) == 0) {
        set_seen(l, e, "", 0);
    }
    gust_buf_free(&value);
}

static void lost(struct gust_leases *l, struct lease *e, int64_t now, const char *why)
{
    gust_warn("lease %s lost (%s): stopping %s", e->key, why, e->name);
    stop_task(l, e);
    set_state(l, e, 0, 0);
    e->next_try = now + l->conf.poll_ms;
}

/* Returns the task's start error, also kept in err when given (the caller reports it);
 * without err, it is logged and tried again after a backoff. */
static int start_task(struct gust_leases *l, struct lease *e, int64_t now, struct gust_err *err)
{
    struct gust_err own = {{0}};
    struct gust_err *e_out = err != NULL ? err : &own;
    int rc = e->task.start(e->task.ud, e_out);
    if (rc == 0) {
        set_state(l, e, 1, 1);
        e->backoff_ms = 0;
        gust_info("lease %s held by %s: %s started", e->key, l->self, e->name);
        return 0;
    }
    e->backoff_ms = e->backoff_ms == 0 ? 1000 : (e->backoff_ms * 2 > 30000 ? 30000 : e->backoff_ms * 2);
    if (err == NULL) {
        gust_error("%s; giving lease %s back, next try in %" PRId64 " ms", own.msg, e->key, e->backoff_ms);
    }
    give_back(l, e);
    e->next_try = now + e->backoff_ms;
    return rc;
}

struct member_count {
    struct gust_leases *l;
    const struct group *g;
    int64_t wall;
    uint32_t members;
    int64_t next;
};

/* Whether rest, what follows want.<group>., is <self>.<instance> (neither has a dot),
 * not a member of another group whose name starts with ours and a dot. */
static int member_key(const char *rest)
{
    const char *dot = strchr(rest, '.');
    return dot != NULL && strchr(dot + 1, '.') == NULL;
}

static void count_member(void *ud, const char *key)
{
    struct member_count *mc = ud;
    char value[GUST_ENTRY_MAX], why[256];
    uint64_t rev = 0;
    if (strncmp(key, mc->g->want_key, mc->g->prefix_len) != 0 || strcmp(key, mc->g->want_key) == 0 ||
        !member_key(key + mc->g->prefix_len) ||
        gust_kv_get(mc->l->kv, key, value, sizeof(value), &rev, why, sizeof(why)) != 0) {
        return;
    }
    struct gust_entry seen;
    gust_entry_read(value, &seen);
    int64_t expires = seen.expires_ms;
    if (expires > mc->wall && !gust_entry_gone(&seen)) {
        mc->members++;
        mc->next = expires + 1 < mc->next ? expires + 1 : mc->next;
    }
}

/* Renews this process's entry of g and counts the live ones, when due. Under run_lock,
 * the bucket open. */
static void count_members(struct gust_leases *l, struct group *g)
{
    int64_t wall = gust_clock_wall_ms();
    if (g->members != 0 && wall < g->count_at_wall) {
        return;
    }
    char why[256];
    struct gust_buf value = {0};
    uint64_t rev = 0;
    int rc = format_value(&value, l, 1, wall + l->conf.ttl_ms);
    rc = rc != 0 ? rc : gust_kv_put(l->kv, g->want_key, value.data, value.len, &rev, why, sizeof(why));
    gust_buf_free(&value);
    if (rc != 0) {
        return; /* the bus is away: the leases' renewals notice it */
    }
    struct member_count mc = {.l = l,
                              .g = g,
                              .wall = wall,
                              .members = 1,
                              .next = wall + l->conf.ttl_ms / 3};
    if (gust_kv_keys(l->kv, count_member, &mc, why, sizeof(why)) != 0) {
        return;
    }
    if (g->members != 0 && mc.members != g->members) {
        gust_info("leases: %u process(es) share %s (%u leases)", mc.members, g->name, g->size);
    }
    g->members = mc.members;
    g->count_at_wall = mc.next;
}

static uint32_t held_in(const struct gust_leases *l, const struct group *g)
{
    uint32_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        n += l->v[i]->group == g && l->v[i]->held;
    }
    return n;
}

static uint32_t share_of(const struct group *g)
{
    uint32_t m = g->members > 0 ? g->members : 1;
    return (g->size + m - 1) / m;
}

/* Whether this process may take e now: a lone lease, or one of a group it holds fewer
 * than its share of. Under run_lock, the bucket open. */
static int under_share(struct gust_leases *l, const struct lease *e)
{
    if (e->group == NULL) {
        return 1;
    }
    count_members(l, e->group);
    return held_in(l, e->group) < share_of(e->group);
}

/* Keeps this process's entry of each group fresh (its heartbeat as a member), and gives
 * one lease of each group it holds more than its share of back to the peers. Under
 * run_lock, the bucket open. */
static void rebalance(struct gust_leases *l)
{
    int64_t now = gust_clock_mono_ms();
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        struct group *g = l->groups[gi];
        count_members(l, g);
        uint32_t held = held_in(l, g), share = share_of(g);
        if (g->members == 0 || held <= share) {
            continue;
        }
        for (size_t i = l->n; i-- > 0;) {
            struct lease *e = l->v[i];
            if (e->group == g && e->held) {
                gust_info("lease %s given to a peer: %u processes share %s, this one held %u (share %u)", e->key,
                          g->members, g->name, held, share);
                stop_task(l, e);
                give_back(l, e);
                e->next_try = now + l->conf.ttl_ms;
                break;
            }
        }
    }
}

/* One round for one lease: renew, acquire, start. Under run_lock. err: see start_task. */
static int step(struct gust_leases *l, struct lease *e, struct gust_err *err)
{
    int64_t now = gust_clock_mono_ms();
    if (ensure_bucket(l) != 0) {
        if (e->held && now >= e->valid_until) {
            lost(l, e, now, "bucket unreachable");
        }
        return 0;
    }
    if (e->held && now >= e->renew_at) {
        struct gust_buf value = {0};
        int64_t expires = gust_clock_wall_ms() + l->conf.ttl_ms;
        uint64_t rev = 0;
        char why[256] = "out of memory";
        if (format_value(&value, l, 1, expires) == 0 &&
            gust_kv_update(l->kv, e->key, value.data, value.len, e->rev, &rev, why, sizeof(why)) == 0) {
            took(l, e, rev, now, expires);
        } else {
            lost(l, e, now, why);
        }
        gust_buf_free(&value);
    }
    if (e->held && now >= e->valid_until) {
        lost(l, e, now, "renewal overdue");
    }
    if (!e->held && e->attached && now >= e->next_try && under_share(l, e)) {
        try_acquire(l, e, now);
        if (!e->held) {
            e->next_try = now + l->conf.poll_ms;
        }
    }
    if (e->held && e->attached && !e->running) {
        return start_task(l, e, now, err);
    }
    return 0;
}

static struct lease *find(struct gust_leases *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i]->key, key) == 0) {
            return l->v[i];
        }
    }
    return NULL;
}

static void *lease_thread(void *arg)
{
    struct gust_leases *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->run_lock);
        pthread_mutex_lock(&l->lock);
        int stopping = l->stopping;
        size_t n = l->n;
        pthread_mutex_unlock(&l->lock);
        if (stopping) {
            pthread_mutex_unlock(&l->run_lock);
            return NULL;
        }
        /* The list only changes under run_lock, which this round holds. */
        for (size_t i = 0; i < n; i++) {
            step(l, l->v[i], NULL);
        }
        if (l->kv != NULL) {
            rebalance(l);
        }
        pthread_mutex_unlock(&l->run_lock);

        int64_t tick = l->conf.poll_ms < l->conf.ttl_ms / 6 ? l->conf.poll_ms : l->conf.ttl_ms / 6;
        pthread_mutex_lock(&l->lock);
        if (!l->stopping) {
            gust_wait_ms(&l->wake, &l->lock, tick / 2 > 20 ? tick / 2 : 20);
        }
        pthread_mutex_unlock(&l->lock);
    }
}

int gust_leases_create(const struct gust_lease_conf *conf, struct gust_bus *bus, struct gust_leases **out,
                       struct gust_err *err)
{
    struct gust_leases *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    l->conf = *conf;
    l->bus = bus;
    snprintf(l->bucket, sizeof(l->bucket), "%s", conf->bucket);
    /* A configured node_name was checked at config time (core/config.c): it is used as
     * it is, never renamed. */
    if (conf->holder != NULL && conf->holder[0] != '\0') {
        snprintf(l->self, sizeof(l->self), "%s", conf->holder);
    } else {
        const struct gust_entry *me = gust_self_entry();
        snprintf(l->self, sizeof(l->self), "%s:%ld", me->host, me->pid);
    }
    l->conf.holder = l->self;
    l->conf.bucket = l->bucket;
    pthread_mutex_init(&l->run_lock, NULL);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    *out = l;
    return 0;
}

/* The group called name, made on first use. Under run_lock. */
static struct group *group_for(struct gust_leases *l, const char *name, uint32_t size)
{
    for (size_t i = 0; i < l->ngroups; i++) {
        if (strcmp(l->groups[i]->name, name) == 0) {
            l->groups[i]->size = size;
            return l->groups[i];
        }
    }
    struct group *g = calloc(1, sizeof(*g));
    struct group **v = g != NULL ? realloc(l->groups, (l->ngroups + 1) * sizeof(*v)) : NULL;
    if (v == NULL) {
        free(g);
        return NULL;
    }
    snprintf(g->name, sizeof(g->name), "%s", name);
    char self[128];
    snprintf(self, sizeof(self), "%s", l->self);
    gust_key_safe(self);
    /* One entry per process, not per node_name: two processes started with one name
     * are two members. */
    g->prefix_len = (size_t)snprintf(g->want_key, sizeof(g->want_key), "want.%s.", g->name);
    snprintf(g->want_key + g->prefix_len, sizeof(g->want_key) - g->prefix_len, "%s.%s", self,
             gust_self_entry()->instance);
    g->size = size;
    l->groups = v;
    l->groups[l->ngroups++] = g;
    return g;
}

/* Forgets the groups no lease is in any more, and this process's entries of them. Under
 * run_lock. */
static void drop_groups(struct gust_leases *l, int all)
{
    size_t kept = 0;
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        struct group *g = l->groups[gi];
        int used = 0;
        for (size_t i = 0; !all && i < l->n; i++) {
            used |= l->v[i]->group == g;
        }
        if (used) {
            l->groups[kept++] = g;
            continue;
        }
        if (l->kv != NULL && g->members != 0) {
            gust_kv_delete(l->kv, g->want_key); /* only this process writes it */
        }
        free(g);
    }
    l->ngroups = kept;
}

int gust_leases_attach(struct gust_leases *l, const char *key, const char *name, const struct gust_lease_task *task,
                       struct gust_err *err)
{
    pthread_mutex_lock(&l->run_lock);
    struct lease *e = find(l, key);
    if (e == NULL) {
        e = calloc(1, sizeof(*e));
        struct lease **v = e != NULL ? realloc(l->v, (l->n + 1) * sizeof(*v)) : NULL;
        if (v == NULL) {
            free(e);
            pthread_mutex_unlock(&l->run_lock);
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        snprintf(e->name, sizeof(e->name), "%s", name);
        snprintf(e->key, sizeof(e->key), "%s", key);
        pthread_mutex_lock(&l->lock);
        l->v = v;
        l->v[l->n++] = e;
        pthread_mutex_unlock(&l->lock);
    }
    e->task = *task;
    e->task.group = NULL; /* the name is kept in e->group */
    if (task->group != NULL && e->group == NULL && (e->group = group_for(l, task->group, task->group_size)) == NULL) {
        pthread_mutex_unlock(&l->run_lock);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    e->attached = 1;
    e->next_try = 0;
    e->backoff_ms = 0;
    /* The first round on the caller's thread: a free lease starts its source before
     * this returns, as a source without a lease would, and a source that cannot start
     * fails the start (or the reload) here rather than retrying in the background. */
    int rc = step(l, e, err);
    if (rc != 0) {
        e->attached = 0;
    }
    pthread_mutex_unlock(&l->run_lock);

    pthread_mutex_lock(&l->lock);
    if (rc == 0 && !l->thread_started) {
        rc = pthread_create(&l->thread, NULL, lease_thread, l) == 0 ? 0 : gust_err_set(err, GUST_EIO, "cannot start the lease thread");
        l->thread_started = rc == 0;
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void gust_leases_detach(struct gust_leases *l, const char *key)
{
    pthread_mutex_lock(&l->run_lock);
    struct lease *e = find(l, key);
    if (e != NULL) {
        stop_task(l, e);
        e->attached = 0;
    }
    pthread_mutex_unlock(&l->run_lock);
}

int gust_leases_holding(struct gust_leases *l, const char *key)
{
    pthread_mutex_lock(&l->lock);
    int yes = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i]->key, key) == 0) {
            /* A margin of a sixth of the TTL: a write this decides on must land before
             * a peer could take the lease. */
            yes = l->v[i]->held && gust_clock_mono_ms() < l->v[i]->valid_until - l->conf.ttl_ms / 6;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return yes;
}

void gust_leases_prune(struct gust_leases *l)
{
    pthread_mutex_lock(&l->run_lock);
    for (size_t i = 0; i < l->n; i++) {
        if (!l->v[i]->attached) {
            give_back(l, l->v[i]);
        }
    }
    /* Out of the list first (under lock, which /units reads with), then freed. */
    struct lease **gone = calloc(l->n + 1, sizeof(*gone));
    size_t kept = 0, ngone = 0;
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i]->attached || gone == NULL) {
            l->v[kept++] = l->v[i];
        } else {
            gone[ngone++] = l->v[i];
        }
    }
    l->n = kept;
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < ngone; i++) {
        free(gone[i]);
    }
    free(gone);
    drop_groups(l, 0);
    pthread_mutex_unlock(&l->run_lock);
}

void gust_leases_destroy(struct gust_leases *l)
{
    if (l == NULL) {
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->stopping = 1;
    pthread_cond_signal(&l->wake);
    int joined = l->thread_started;
    pthread_mutex_unlock(&l->lock);
    if (joined) {
        pthread_join(l->thread, NULL);
    }
    for (size_t i = 0; i < l->n; i++) {
        stop_task(l, l->v[i]);
        give_back(l, l->v[i]);
        free(l->v[i]);
    }
    free(l->v);
    drop_groups(l, 1);
    free(l->groups);
    gust_kv_close(l->kv);
    pthread_cond_destroy(&l->wake);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->run_lock);
    free(l);
}

static int port_attach(void *impl, const char *key, const char *name, const struct gust_lease_task *task,
                       struct gust_err *err)
{
    return gust_leases_attach(impl, key, name, task, err);
}

static void port_detach(void *impl, const char *key)
{
    gust_leases_detach(impl, key);
}

static int port_holding(void *impl, const char *key)
{
    return gust_leases_holding(impl, key);
}

struct gust_lease_port gust_leases_port(struct gust_leases *l)
{
    return (struct gust_lease_port){.impl = l, .attach = port_attach, .detach = port_detach, .holding = port_holding};
}

const char *gust_leases_self(const struct gust_leases *l)
{
    return l->self;
}

void gust_leases_render_fields(struct gust_leases *l, struct gust_buf *out)
{
    pthread_mutex_lock(&l->lock);
    gust_buf_append(out, "\"self\":", 7);
    gust_json_append_string(out, l->self, strlen(l->self));
    gust_buf_append(out, ",\"leases\":[", 11);
    int64_t now = gust_clock_wall_ms();
    int first = 1;
    for (size_t i = 0; i < l->n; i++) {
        const struct lease *e = l->v[i];
        gust_buf_printf(out, "%s{\"name\":", first ? "" : ",");
        first = 0;
        gust_json_append_string(out, e->name, strlen(e->name));
        int free_now = e->holder[0] == '\0' || e->expires_ms <= now;
        gust_buf_printf(out, ",\"held\":%s,\"running\":%s,\"holder\":", e->held ? "true" : "false",
                        e->running ? "true" : "false");
        if (free_now) {
            gust_buf_append(out, "null", 4);
        } else {
            gust_json_append_string(out, e->holder, strlen(e->holder));
        }
        gust_buf_printf(out, ",\"expires_ms\":%" PRId64 "}", e->expires_ms);
    }
    gust_buf_append(out, "]", 1);
    pthread_mutex_unlock(&l->lock);
}
