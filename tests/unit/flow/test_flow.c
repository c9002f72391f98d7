/* The flow API: loading, running, emits, failures, the time limit, threads. */
#include <pthread.h>
#include <time.h>

#include "../../check.h"
#include "scripts.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run(struct gust_flow *f, const char *json, struct gust_emits *out, struct gust_err *err)
{
    return gust_flow_run(f, json, strlen(json), NULL, out, err);
}

static void test_create_errors(void)
{
    struct gust_flow *f = (struct gust_flow *)&f;
    struct gust_err err;
    struct gust_flow_opts opts = {.script_path = "/nonexistent/flow.lua"};
    CHECK(gust_flow_create(&opts, &f, &err) == GUST_ECONFIG);
    CHECK(f == NULL);
    CHECK_CONTAINS(err.msg, "cannot open /nonexistent/flow.lua");

    CHECK(flow_from_text("return {\n on_event = function(ev)\n x = = 1 end }", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:3: unexpected symbol near '='");

    CHECK(flow_from_text("local t = nil\nreturn t.x", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:2: attempt to index local 't' (a nil value)");
    CHECK_CONTAINS(err.msg, "stack traceback:");

    CHECK(flow_from_text("return 5\n", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:1: the script must return a table with an on_event function");
    CHECK(flow_from_text("return { on_event = 1 }", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "must return a table with an on_event function");
    CHECK(flow_from_text("return { on_event = print, source = {} }", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "the field source must be a string");

    CHECK(flow_from_text("emit('ev.x', {})\nreturn { on_event = print }", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:1: emit: only on_event can emit");

    /* A precompiled script is refused like a bytecode load(). */
    CHECK(flow_from_text("\033LJ\002", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua: attempt to load chunk with wrong mode");

    gust_flow_destroy(NULL);
}

static void test_run_and_emits(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    const char *script = "local count = 0 -- state kept between events of one flow\n"
                         "return { source = 'ev.in', on_event = function(ev)\n"
                         "  count = count + 1\n"
                         "  for i = 1, ev.n do emit('ev.out.' .. i, { count = count }) end\n"
                         "  if ev.fail then error('failed on purpose') end\n"
                         "end }";
    CHECK(flow_from_text(script, 0, &f, &err) == 0);
    CHECK_STR(gust_flow_source(f), "ev.in");

    CHECK(run(f, "{\"n\": 2}", &out, &err) == 0);
    CHECK(out.n == 2);
    CHECK_STR(out.v[0].subject, "ev.out.1");
    CHECK_STR(out.v[1].subject, "ev.out.2");
    CHECK_STR(out.v[1].payload, "{\"count\":1}");
    CHECK(out.v[1].len == strlen("{\"count\":1}"));

    /* Emits of later events are appended; a failure removes only its own. */
    CHECK(run(f, "{\"n\": 3, \"fail\": true}", &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:5: failed on purpose");
    CHECK(out.n == 2);
    CHECK(run(f, "{\"n\": 1}", &out, &err) == 0);
    CHECK(out.n == 3);
    CHECK_STR(out.v[2].payload, "{\"count\":3}");

    /* Invalid input never reaches the script. */
    CHECK(run(f, "{\"n\": 1", &out, &err) == GUST_EINVAL);
    CHECK_CONTAINS(err.msg, "invalid JSON");
    CHECK(out.n == 3);
    CHECK(run(f, "{\"n\": 1}", &out, &err) == 0);
    CHECK(out.n == 4);
    CHECK_STR(out.v[3].payload, "{\"count\":4}");

    /* Input need not be NUL-terminated: only len bytes are read. */
    CHECK(gust_flow_run(f, "{\"n\": 1}garbage", 8, NULL, &out, &err) == 0);
    CHECK(out.n == 5);

    size_t cap = out.cap;
    gust_emits_clear(&out);
    CHECK(out.n == 0 && out.cap == cap && out.v != NULL);
    for (int i = 0; i < 20; i++) { /* grows past the first capacity */
        CHECK(run(f, "{\"n\": 3}", &out, &err) == 0);
    }
    CHECK(out.n == 60);
    gust_emits_free(&out);
    CHECK(out.v == NULL && out.n == 0 && out.cap == 0);
    gust_flow_destroy(f);

    /* Emits from C: copies, NUL-terminated, appended like a script's. */
    char payload[] = "{\"x\":1}garbage";
    CHECK(gust_emits_push(&out, "ev.relay", payload, 7) == 0);
    payload[0] = '?';
    CHECK(out.n == 1);
    CHECK_STR(out.v[0].subject, "ev.relay");
    CHECK_STR(out.v[0].payload, "{\"x\":1}");
    CHECK(out.v[0].len == 7);
    gust_emits_free(&out);

    /* A source is optional. */
    CHECK(flow_from_text("return { on_event = function() end }", 0, &f, &err) == 0);
    CHECK(gust_flow_source(f) == NULL);
    gust_flow_destroy(f);
}

/* The decoder keeps its yajl handle across events: failures in between, of the
 * event or of json.decode, must not leak into the next decode. */
static void test_decoder_reuse(void)
{
    static const struct {
        const char *in;
        int rc;
        const char *want; /* the payload, or a part of the error */
    } steps[] = {
        {"{\"a\": 1}", 0, "{\"a\":1}"},
        {"{\"a\": 1", GUST_EINVAL, "invalid JSON"},
        {"{\"a\": 2}", 0, "{\"a\":2}"},
        {"{}{}", GUST_EINVAL, "invalid JSON: more than one value"},
        {"{} 5", GUST_EINVAL, "invalid JSON: more than one value"},
        {"{\"a\": 12", GUST_EINVAL, "invalid JSON"},
        {"{\"a\": 3}", 0, "{\"a\":3}"},
        {"{\"a\": [1, 2]} x", GUST_EINVAL, "invalid JSON"},
        {"{\"d\": \"[1, \"}", GUST_ECONFIG, "decode failed"},
        {"{\"d\": \"[1]\"}", 0, "{\"d\":[1]}"},
        {"  {\"a\": 4}  ", 0, "{\"a\":4}"},
    };
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    const char *script = "return { on_event = function(ev)\n"
                         "  if ev.d then\n"
                         "    local v, e = json.decode(ev.d)\n"
                         "    if v == nil then error('decode failed: ' .. e) end\n"
                         "    ev.d = v\n"
                         "  end\n"
                         "  emit('ev.out', ev)\n"
                         "end }";
    CHECK(flow_from_text(script, 0, &f, &err) == 0);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        int rc = run(f, steps[i].in, &out, &err);
        CHECK(rc == steps[i].rc);
        if (rc == 0) {
            CHECK(out.n == 1);
            CHECK_STR(out.n == 1 ? out.v[0].payload : NULL, steps[i].want);
        } else {
            CHECK(out.n == 0);
            CHECK_CONTAINS(err.msg, steps[i].want);
        }
        gust_emits_clear(&out);
    }
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

static void test_error_objects(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    CHECK(flow_from_text("return { on_event = function(ev) error({ code = 1 }) end }", 0, &f, &err) == 0);
    CHECK(run(f, "{}", &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "(error object is a table value)");
    gust_flow_destroy(f);
}

/* Every way of looping forever in the fixture is stopped, one after the other on the
 * same flow: a timeout must leave the hook ready for the next event. */
static void test_timeout(void)
{
    static const char *const events[] = {
        "{\"mode\": \"plain\"}",  "{\"mode\": \"pcall\"}",     "{\"mode\": \"xpcall\"}",
        "{\"mode\": \"resume\"}", "{\"mode\": \"coroutine\"}", "{\"mode\": \"plain\"}",
    };
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    struct gust_flow_opts opts = {.script_path = GUST_FIXTURES "/infinite_loop.lua", .timeout_ms = 50};
    CHECK(gust_flow_create(&opts, &f, &err) == 0);
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        double t0 = now_ms();
        CHECK(run(f, events[i], &out, &err) == GUST_ETIMEOUT);
        double took = now_ms() - t0;
        if (took < 49 || took > 500) {
            fprintf(stderr, "%s: stopped after %.1f ms\n", events[i], took);
            CHECK(!"stopped too early or too late");
        }
        CHECK_CONTAINS(err.msg, "infinite_loop.lua:");
        CHECK_CONTAINS(err.msg, "timeout: the script ran longer than 50 ms");
        /* The flow works again at once, and a quick event is not cut short. */
        CHECK(run(f, "{\"mode\": \"none\"}", &out, &err) == 0);
    }
    gust_flow_destroy(f);
}

/* Two flows on two threads at once share nothing. */
static void *thread_main(void *arg)
{
    long id = (long)arg;
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    char script[256], event[64], want[64];
    snprintf(script, sizeof(script),
             "local id = %ld\nreturn { on_event = function(ev) emit('ev.t', { id = id, i = ev.i }) end }",
             id);
    if (flow_from_text(script, 0, &f, &err) != 0) {
        return (void *)1;
    }
    long bad = 0;
    for (int i = 0; i < 3000; i++) {
        snprintf(event, sizeof(event), "{\"i\": %d}", i);
        snprintf(want, sizeof(want), "\"id\":%ld", id);
        bad += run(f, event, &out, &err) != 0 || out.n != 1 || strstr(out.v[0].payload, want) == NULL;
        gust_emits_clear(&out);
    }
    gust_emits_free(&out);
    gust_flow_destroy(f);
    return (void *)bad;
}

static void test_threads(void)
{
    pthread_t t[2];
    for (long i = 0; i < 2; i++) {
        CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(i + 1)) == 0);
    }
    for (int i = 0; i < 2; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        CHECK(bad == NULL);
    }
}

/* memory_max: a run that goes over fails with GUST_ENOMEM, the state is rebuilt (the
 * script's globals start afresh, the heap goes back down), the flow works on; a script
 * that loads over the bound is refused. */
static void test_memory_max(void)
{
    static const char script[] = "local runs = 0\n"
                                 "return { on_event = function(ev)\n"
                                 "  runs = runs + 1\n"
                                 "  if ev.hog then local t = {} for i = 1, 1e9 do t[i] = tostring(i) .. 'xxxxxxxx' end end\n"
                                 "  emit('ev.out', { runs = runs })\n"
                                 "end }";
    struct gust_flow_opts opts = {.script_path = "hog.lua",
                                  .script_text = script,
                                  .script_len = sizeof(script) - 1,
                                  .timeout_ms = 20000,
                                  .memory_max = 8 << 20};
    struct gust_flow *f = NULL;
    struct gust_err err;
    struct gust_emits out = {0};
    CHECK(gust_flow_create(&opts, &f, &err) == 0);
    if (f == NULL) {
        return;
    }
    size_t base = gust_flow_heap_bytes(f);
    CHECK(base > 0 && base < (1 << 20));
    CHECK(run(f, "{}", &out, &err) == 0);
    CHECK(run(f, "{\"hog\": true}", &out, &err) == GUST_ENOMEM);
    CHECK_CONTAINS(err.msg, "over memory_max (8388608 bytes)");
    CHECK(gust_flow_memory_failures(f) == 1);
    CHECK(gust_flow_heap_bytes(f) < (1 << 20));
    CHECK(run(f, "{}", &out, &err) == 0);
    /* The rebuilt state counts from 1 again: emits of runs 1, then 1. */
    CHECK(out.n == 2);
    if (out.n == 2) {
        CHECK_STR(out.v[0].payload, "{\"runs\":1}");
        CHECK_STR(out.v[1].payload, "{\"runs\":1}");
    }
    gust_emits_free(&out);
    gust_flow_destroy(f);

    static const char big[] = "local t = {} for i = 1, 1e6 do t[i] = {} end\n"
                              "return { on_event = function() end }";
    opts.script_text = big;
    opts.script_len = sizeof(big) - 1;
    CHECK(gust_flow_create(&opts, &f, &err) == GUST_ENOMEM);
    CHECK_CONTAINS(err.msg, "loading the script took the Lua heap over memory_max");
    /* A bound too small for the sandbox itself: refused, not a crash in lua_newstate. */
    opts.memory_max = 1;
    CHECK(gust_flow_create(&opts, &f, &err) == GUST_ENOMEM);
    CHECK_CONTAINS(err.msg, "over memory_max (1 bytes)");
}

/* emit() encodes into the emits arena in place: an encode that fails half-way, after
 * growing the arena, and that the script catches (last, too) leaves the earlier emits
 * readable where the arena now is, and nothing of its own. */
static void test_emit_caught_failure(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    const char *script = "return { on_event = function(ev)\n"
                         "  emit('ev.first', { n = ev.n })\n"
                         "  local ok, why = pcall(emit, 'ev.broken', array({ string.rep('x', 300000), print }))\n"
                         "  emit('ev.last', { ok = ok, why = why })\n"
                         "  pcall(emit, 'ev.broken', array({ string.rep('y', 600000), print }))\n"
                         "end }";
    CHECK(flow_from_text(script, 0, &f, &err) == 0);
    CHECK(run(f, "{\"n\": 7}", &out, &err) == 0);
    CHECK(out.n == 2);
    if (out.n == 2) {
        CHECK_STR(out.v[0].subject, "ev.first");
        CHECK_STR(out.v[0].payload, "{\"n\":7}");
        CHECK_STR(out.v[1].subject, "ev.last");
        CHECK_CONTAINS(out.v[1].payload, "cannot encode a function value");
        CHECK(out.bytes.len < 1000, "the broken emit's %zu bytes stayed", out.bytes.len);
    }
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

int main(void)
{
    test_create_errors();
    test_run_and_emits();
    test_emit_caught_failure();
    test_decoder_reuse();
    test_error_objects();
    test_timeout();
    test_memory_max();
    test_threads();
    return check_result("test_flow");
}
