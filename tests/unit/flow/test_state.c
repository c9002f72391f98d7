/* Durable state, library side: the staging of a batch over a store (reads once per
 * key, reads see the batch's writes, a failed message's writes undone, which messages
 * touched each key, expiry by the message's time), the script-facing checks, and the
 * in-memory store's compare-and-set commit. */
#include "../../check.h"
#include "scripts.h"

/* The in-memory store behind a counter of reads and a switch that makes it fail. */
struct counting {
    struct gust_state_store inner;
    int reads;
    int fail;
    const uint64_t *applied; /* given with every value read (ranges), when set */
    size_t napplied;
};

static int counting_read(void *ud, const char *key, size_t key_len, int64_t now_ms,
                         struct gust_state_value *out, struct gust_err *err)
{
    struct counting *c = ud;
    c->reads++;
    if (c->fail) {
        return gust_err_set(err, GUST_EIO, "the bucket is unavailable");
    }
    int rc = c->inner.read(c->inner.ud, key, key_len, now_ms, out, err);
    if (rc == 0 && c->napplied > 0) {
        out->applied = malloc(2 * c->napplied * sizeof(*out->applied));
        memcpy(out->applied, c->applied, 2 * c->napplied * sizeof(*out->applied));
        out->napplied = c->napplied;
    }
    return rc;
}

struct fixture {
    struct gust_state_mem *mem;
    struct counting counting;
    struct gust_state_store store;
    struct gust_flow *flow;
    struct gust_emits out;
};

static void setup_store(struct fixture *x, const char *script, int read_first)
{
    memset(x, 0, sizeof(*x));
    CHECK(gust_state_mem_create(&x->mem) == 0);
    x->counting.inner = gust_state_mem_store(x->mem);
    x->store = (struct gust_state_store){.read = counting_read, .ud = &x->counting, .read_first = read_first};
    struct gust_err err;
    struct gust_flow_opts opts = {.state = &x->store};
    int rc = flow_from_text_opts(script, opts, &x->flow, &err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
}

static void setup(struct fixture *x, const char *script)
{
    setup_store(x, script, 0);
}

static void teardown(struct fixture *x)
{
    gust_emits_free(&x->out);
    gust_flow_destroy(x->flow);
    gust_state_mem_destroy(x->mem);
}

static int run_at(struct fixture *x, const char *json, int64_t time_ms, struct gust_err *err)
{
    struct gust_flow_meta meta = {.time_ms = time_ms};
    return gust_flow_run(x->flow, json, strlen(json), &meta, &x->out, err);
}

static int run_seq(struct fixture *x, const char *json, uint64_t seq, struct gust_err *err)
{
    struct gust_flow_meta meta = {.seq = seq};
    return gust_flow_run(x->flow, json, strlen(json), &meta, &x->out, err);
}

static int put(struct fixture *x, const char *key, const char *json)
{
    return gust_state_mem_put(x->mem, key, strlen(key), json, strlen(json), 0);
}

static const struct gust_state_write *find_write(const struct gust_state_write *w, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(w[i].key, key) == 0) {
            return &w[i];
        }
    }
    return NULL;
}

/* A script doing what each event says: op, k, v, n, ttl; fail makes it throw after. */
static const char *const OPS = "return { on_event = function(ev)\n"
                               "  local r\n"
                               "  if ev.op == 'get' then r = state.get(ev.k)\n"
                               "  elseif ev.op == 'set' then state.set(ev.k, ev.v, ev.ttl)\n"
                               "  elseif ev.op == 'incr' then r = state.incr(ev.k, ev.n)\n"
                               "  elseif ev.op == 'del' then state.del(ev.k) end\n"
                               "  emit('ev.r', { r = r == nil and null or r })\n"
                               "  if ev.fail then error('failed after ' .. ev.op) end\n"
                               "end }";

static void test_batch_staging(void)
{
    struct fixture x;
    struct gust_err err;
    setup(&x, OPS);
    CHECK(put(&x, "count", "10") == 0);
    CHECK(put(&x, "name", "\"old\"") == 0);

    gust_flow_state_begin(x.flow);
    /* 0: incr reads the store once; 1: incr again sees 11, not the store's 10. */
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"count\",\"n\":1}", 0, &err) == 0);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"count\",\"n\":5}", 0, &err) == 0);
    CHECK(x.counting.reads == 1);
    CHECK_STR(x.out.v[1].payload, "{\"r\":16}");
    /* 2: a write that fails is undone, and does not count as touching the key. */
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"count\",\"n\":100,\"fail\":true}", 0, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "failed after incr");
    /* 3: reads the staged value again, as before message 2. */
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"count\"}", 0, &err) == 0);
    CHECK_STR(x.out.v[2].payload, "{\"r\":16}");
    /* 4: a blind set (no read before it); 5: a delete. */
    CHECK(run_at(&x, "{\"op\":\"set\",\"k\":\"name\",\"v\":{\"a\":[1,2.5,\"x\"]}}", 0, &err) == 0);
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"name\"}", 0, &err) == 0);
    CHECK_STR(x.out.v[4].payload, "{\"r\":{\"a\":[1,2.5,\"x\"]}}");
    CHECK(run_at(&x, "{\"op\":\"del\",\"k\":\"gone\"}", 0, &err) == 0);
    /* 7: only read: touched, but not a write. */
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"absent\"}", 0, &err) == 0);
    CHECK_STR(x.out.v[6].payload, "{\"r\":null}");
    CHECK(x.counting.reads == 2); /* count, absent: name and gone were written before any read */

    const struct gust_state_write *w;
    size_t n = gust_flow_state_writes(x.flow, &w);
    CHECK(n == 3);
    const struct gust_state_write *count = find_write(w, n, "count"), *name = find_write(w, n, "name"),
                                  *gone = find_write(w, n, "gone");
    CHECK(count != NULL && name != NULL && gone != NULL && find_write(w, n, "absent") == NULL);
    if (count != NULL && name != NULL && gone != NULL) {
        CHECK_STR(count->json, "16");
        CHECK(count->has_revision && count->revision == 1);
        CHECK(count->nmsgs == 3 && count->msgs[0] == 0 && count->msgs[1] == 1 && count->msgs[2] == 3);
        CHECK_STR(name->json, "{\"a\":[1,2.5,\"x\"]}");
        CHECK(!name->has_revision); /* blind: may be put unconditionally */
        CHECK(name->nmsgs == 2 && name->msgs[0] == 4 && name->msgs[1] == 5);
        CHECK(gone->json == NULL && gone->nmsgs == 1 && gone->msgs[0] == 6);
        CHECK(w[0].key == count->key); /* in the order keys were first touched */
    }

    /* The committer's side: the in-memory store's compare-and-set. */
    unsigned char conflict[3] = {9, 9, 9};
    CHECK(gust_state_mem_commit(x.mem, w, n, conflict) == 0);
    CHECK(conflict[0] == 0 && conflict[1] == 0 && conflict[2] == 0);

    /* A new batch forgets the staging and reads the committed values. */
    gust_flow_state_begin(x.flow);
    CHECK(gust_flow_state_writes(x.flow, &w) == 0);
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"count\"}", 0, &err) == 0);
    CHECK_STR(x.out.v[7].payload, "{\"r\":16}");
    CHECK(x.counting.reads == 3);
    teardown(&x);
}

static void test_conflict(void)
{
    struct fixture x;
    struct gust_err err;
    setup(&x, OPS);
    CHECK(put(&x, "a", "1") == 0);
    CHECK(put(&x, "b", "1") == 0);
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"a\"}", 0, &err) == 0);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"b\"}", 0, &err) == 0);
    /* Someone else writes b meanwhile. */
    CHECK(put(&x, "b", "50") == 0);
    const struct gust_state_write *w;
    size_t n = gust_flow_state_writes(x.flow, &w);
    unsigned char conflict[2];
    CHECK(n == 2);
    CHECK(gust_state_mem_commit(x.mem, w, n, conflict) == 1);
    CHECK(conflict[0] == 0 && conflict[1] == 1);
    CHECK(w[1].nmsgs == 1 && w[1].msgs[0] == 1); /* the message to retry */
    /* Nothing was written: a is still 1. */
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"a\"}", 0, &err) == 0);
    CHECK_STR(x.out.v[2].payload, "{\"r\":1}");
    /* A key created meanwhile makes a create (revision 0) conflict too. */
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"c\"}", 0, &err) == 0);
    CHECK(put(&x, "c", "7") == 0);
    n = gust_flow_state_writes(x.flow, &w);
    CHECK(n == 1 && w[0].has_revision && w[0].revision == 0);
    CHECK(gust_state_mem_commit(x.mem, w, n, conflict) == 1);
    teardown(&x);
}

static void test_expiry(void)
{
    struct fixture x;
    struct gust_err err;
    setup(&x, OPS);
    const int64_t t = 1764400000000;
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"set\",\"k\":\"s\",\"v\":3,\"ttl\":1.5}", t, &err) == 0);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"s\"}", t + 1499, &err) == 0); /* keeps the expiry */
    CHECK_STR(x.out.v[1].payload, "{\"r\":4}");
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"s\"}", t + 1500, &err) == 0); /* expired */
    CHECK_STR(x.out.v[2].payload, "{\"r\":null}");
    const struct gust_state_write *w;
    CHECK(gust_flow_state_writes(x.flow, &w) == 1 && w[0].expires_ms == t + 1500);
    unsigned char conflict[1];
    CHECK(gust_state_mem_commit(x.mem, w, 1, conflict) == 0);
    /* The store hides it from a message stored after its expiry, not before. */
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"get\",\"k\":\"s\"}", t + 1000, &err) == 0);
    CHECK_STR(x.out.v[3].payload, "{\"r\":4}");
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"op\":\"incr\",\"k\":\"s\"}", t + 2000, &err) == 0); /* a new counter */
    CHECK_STR(x.out.v[4].payload, "{\"r\":1}");
    CHECK(gust_flow_state_writes(x.flow, &w) == 1 && w[0].expires_ms == 0);
    /* A ttl needs the message's time. */
    CHECK(run_at(&x, "{\"op\":\"set\",\"k\":\"s\",\"v\":3,\"ttl\":1}", 0, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "state.set: a ttl counts from meta.time, which this message does not have");
    teardown(&x);
}

static void test_errors(void)
{
    struct fixture x;
    struct gust_err err;
    setup(&x, "return { on_event = function(ev) load(ev.code)() end }");
    CHECK(put(&x, "text", "\"abc\"") == 0);
    gust_flow_state_begin(x.flow);
    static const struct {
        const char *code, *error;
    } cases[] = {
        {"state.get(1)", "state.get: the key must be a string, not a number"},
        {"state.get('')", "state.get: a key is 1 to 256 bytes, without NUL"},
        {"state.get(string.rep('k', 257))", "a key is 1 to 256 bytes"},
        {"state.get('a' .. string.char(0) .. 'b')", "without NUL"},
        {"state.set('k')", "state.set: the value is nil (state.del removes a key)"},
        {"state.set('k', function() end)", "cannot"},
        {"state.set('k', 1, -1)", "state.set: ttl must be a positive number of seconds"},
        {"state.set('k', string.rep('x', 70000))",
         "state.set: the value of 'k' is 70002 bytes of JSON, more than 65536"},
        {"state.incr('text')", "state.incr: the value of 'text' is not a number"},
        {"state.incr('k', 0/0)", "state.incr: the increment must be a finite number"},
        {"state.incr('k', 1e308) state.incr('k', 1e308)",
         "state.incr: the sum for 'k' is not a finite number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[256];
        snprintf(json, sizeof(json), "{\"code\": \"%s\"}", cases[i].code);
        CHECK(run_at(&x, json, 0, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, cases[i].error);
    }
    const struct gust_state_write *w;
    CHECK(gust_flow_state_writes(x.flow, &w) == 0); /* every failed message undone */

    /* A store that cannot answer fails the message (it is retried). */
    x.counting.fail = 1;
    CHECK(run_at(&x, "{\"code\": \"state.get('other')\"}", 0, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "state.get: the state store failed: the bucket is unavailable");
    x.counting.fail = 0;
    CHECK(run_at(&x, "{\"code\": \"emit('ev.x', {v = state.get('other') or 0})\"}", 0, &err) == 0);
    teardown(&x);

    /* No store; state at the script's top level. */
    struct gust_flow *f;
    struct gust_emits out = {0};
    CHECK(flow_from_text("return { on_event = function(ev) state.get('k') end }", 0, &f, &err) == 0);
    CHECK(gust_flow_run(f, "{}", 2, NULL, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "state: this flow has no state store");
    gust_flow_destroy(f);
    struct gust_state_mem *mem;
    CHECK(gust_state_mem_create(&mem) == 0);
    struct gust_state_store store = gust_state_mem_store(mem);
    struct gust_flow_opts opts = {.state = &store};
    CHECK(flow_from_text_opts("state.set('k', 1)\nreturn { on_event = print }", opts, &f, &err) ==
          GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:1: state: only on_event can use state");
    gust_state_mem_destroy(mem);
    gust_emits_free(&out);
}

static void test_many_keys(void)
{
    struct fixture x;
    struct gust_err err;
    setup(&x, "return { on_event = function(ev) for i = 1, ev.n do state.incr('k' .. i % 1000) end end }");
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"n\": 5000}", 0, &err) == 0);
    const struct gust_state_write *w;
    size_t n = gust_flow_state_writes(x.flow, &w);
    CHECK(n == 1000 && x.counting.reads == 1000);
    unsigned char *conflict = calloc(n, 1);
    CHECK(gust_state_mem_commit(x.mem, w, n, conflict) == 0);
    free(conflict);
    gust_flow_state_begin(x.flow);
    CHECK(run_at(&x, "{\"n\": 1000}", 0, &err) == 0);
    n = gust_flow_state_writes(x.flow, &w);
    int all_six = n == 1000;
    for (size_t i = 0; i < n; i++) {
        all_six &= strcmp(w[i].json, "6") == 0 && w[i].nmsgs == 1;
    }
    CHECK(all_six);
    teardown(&x);
}

/* A store that records which messages each value includes: a message among them is a
 * redelivery whose effect on the key is there already, and changes nothing. */
static void test_applied(void)
{
    struct fixture x;
    struct gust_err err;
    setup_store(&x, OPS, 1);
    static const uint64_t ranges[] = {10, 12, 20, 20};
    x.counting.applied = ranges;
    x.counting.napplied = 2;
    CHECK(put(&x, "count", "5") == 0);
    CHECK(put(&x, "name", "\"kept\"") == 0);

    gust_flow_state_begin(x.flow);
    /* 0 (seq 13): new, counts. 1 (seq 11): applied, returns the stored 5, not 6. */
    CHECK(run_seq(&x, "{\"op\":\"incr\",\"k\":\"count\"}", 13, &err) == 0);
    CHECK(run_seq(&x, "{\"op\":\"incr\",\"k\":\"count\"}", 11, &err) == 0);
    CHECK(run_seq(&x, "{\"op\":\"get\",\"k\":\"count\"}", 20, &err) == 0); /* the value as stored */
    CHECK(run_seq(&x, "{\"op\":\"get\",\"k\":\"count\"}", 21, &err) == 0); /* the batch's value */
    CHECK_STR(x.out.v[0].payload, "{\"r\":6}");
    CHECK_STR(x.out.v[1].payload, "{\"r\":5}");
    CHECK_STR(x.out.v[2].payload, "{\"r\":5}");
    CHECK_STR(x.out.v[3].payload, "{\"r\":6}");
    /* 4, 5 (seq 10, 12): a set and a delete of applied messages write nothing; the set
     * reads first (read_first), to know. */
    CHECK(run_seq(&x, "{\"op\":\"set\",\"k\":\"name\",\"v\":\"new\"}", 10, &err) == 0);
    CHECK(run_seq(&x, "{\"op\":\"del\",\"k\":\"count\"}", 12, &err) == 0);
    CHECK(x.counting.reads == 2);
    /* 6 (seq 20): an applied incr of an absent key returns its increment. */
    CHECK(run_seq(&x, "{\"op\":\"incr\",\"k\":\"fresh\",\"n\":4}", 20, &err) == 0);
    CHECK_STR(x.out.v[6].payload, "{\"r\":4}");
    CHECK(gust_flow_state_skipped(x.flow) == 5);

    const struct gust_state_write *w;
    size_t n = gust_flow_state_writes(x.flow, &w);
    CHECK(n == 1);
    if (n == 1) {
        CHECK_STR(w[0].key, "count");
        CHECK_STR(w[0].json, "6");
        CHECK(w[0].nmsgs == 2 && w[0].msgs[0] == 0 && w[0].msgs[1] == 3); /* not the applied ones */
        CHECK(w[0].napplied == 2 && w[0].applied[0] == 10 && w[0].applied[3] == 20);
        CHECK(w[0].has_revision && w[0].revision == 1);
    }
    /* A message without a sequence is never taken for one applied. */
    gust_flow_state_begin(x.flow);
    CHECK(run_seq(&x, "{\"op\":\"set\",\"k\":\"name\",\"v\":\"new\"}", 0, &err) == 0);
    CHECK(gust_flow_state_writes(x.flow, &w) == 1 && w[0].has_revision);
    teardown(&x);
}

int main(void)
{
    test_applied();
    test_batch_staging();
    test_conflict();
    test_expiry();
    test_errors();
    test_many_keys();
    return check_result("test_state");
}
