/* The KV state store's own logic, without a server: the key escape, the envelope read
 * and written back, the ranges of a batch, their merge and pruning, the cache's bound.
 * flow_state.c is included to reach its statics. */
#include "../../../host/unit/flow_state.c"

#include "../../check.h"

static void test_keys(void)
{
    char out[KV_KEY_MAX];
    static const struct {
        const char *key, *want;
    } cases[] = {
        {"dev-1_A", "u.dev-1_A"}, {"a.b", "u.a=2Eb"},   {"a=2Eb", "u.a=3D2Eb"}, {"sp ace", "u.sp=20ace"},
        {"caf\xc3\xa9", "u.caf=C3=A9"}, {"*>", "u.=2A=3E"}, {"/", "u.=2F"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = gust_kv_state_key("u", cases[i].key, strlen(cases[i].key), out, sizeof(out));
        CHECK_STR(out, cases[i].want);
        CHECK(n == strlen(cases[i].want));
    }
    /* The longest key, every byte escaped, fits. */
    char key[GUST_STATE_KEY_MAX];
    memset(key, 0xff, sizeof(key));
    char unit[80];
    memset(unit, 'u', sizeof(unit) - 1);
    unit[sizeof(unit) - 1] = '\0';
    size_t n = gust_kv_state_key(unit, key, sizeof(key), out, sizeof(out));
    CHECK(n == strlen(unit) + 1 + 3 * GUST_STATE_KEY_MAX && strcmp(out + n - 3, "=FF") == 0);
    /* Injective: every one-byte key and two-byte key gives its own KV key. */
    static char seen[256 + 256 * 256][16];
    size_t k = 0;
    int distinct = 1;
    for (int a = 1; a < 256; a++) {
        char s[2] = {(char)a, 0};
        gust_kv_state_key("u", s, 1, seen[k++], 16);
    }
    for (int a = 1; a < 256; a += 7) {
        for (int b = 1; b < 256; b += 5) {
            char s[2] = {(char)a, (char)b};
            gust_kv_state_key("u", s, 2, seen[k++], 16);
        }
    }
    for (size_t i = 0; i < k && distinct; i++) {
        for (size_t j = i + 1; j < k; j++) {
            if (strcmp(seen[i], seen[j]) == 0) {
                distinct = 0;
                fprintf(stderr, "same KV key %s\n", seen[i]);
                break;
            }
        }
    }
    CHECK(distinct);
}

static void test_envelope(void)
{
    struct gust_state_value v = {0};
    char why[128];
    const char *text = "{\"v\":{\"n\":12345678901234567890,\"s\":\"a\\u0000b\"},\"x\":1764400000000,"
                       "\"a\":[[1,5],[9,9]]}";
    CHECK(parse_envelope(text, strlen(text), &v, why, sizeof(why)) == 0);
    CHECK_STR(v.json, "{\"n\":12345678901234567890,\"s\":\"a\\u0000b\"}");
    CHECK(v.expires_ms == 1764400000000 && v.napplied == 2);
    CHECK(v.applied[0] == 1 && v.applied[1] == 5 && v.applied[2] == 9 && v.applied[3] == 9);
    /* Written back as it was read. */
    struct gust_state_write w = {.json = v.json, .len = v.len, .expires_ms = v.expires_ms};
    struct gust_buf out = {0};
    CHECK(write_envelope(&out, &w, v.applied, v.napplied) == 0);
    CHECK(gust_buf_append(&out, "", 1) == 0);
    CHECK_STR(out.data, text);
    free(v.json);
    free(v.applied);
    /* A deletion: v null, no expiry kept. */
    w = (struct gust_state_write){.json = NULL, .expires_ms = 99};
    out.len = 0;
    uint64_t one[] = {7, 8};
    CHECK(write_envelope(&out, &w, one, 1) == 0 && gust_buf_append(&out, "", 1) == 0);
    CHECK_STR(out.data, "{\"v\":null,\"x\":0,\"a\":[[7,8]]}");
    v = (struct gust_state_value){0};
    CHECK(parse_envelope(out.data, out.len - 1, &v, why, sizeof(why)) == 0);
    CHECK(v.json == NULL && v.napplied == 1);
    free(v.applied);
    gust_buf_free(&out);
    /* What is not an envelope. */
    static const char *const bad[] = {
        "42", "{\"x\":0}", "{\"v\":1,\"x\":-1}", "{\"v\":1,\"x\":1.5}", "{\"v\":1,\"a\":[[2,1]]}",
        "{\"v\":1,\"a\":[[1,5],[5,6]]}", "{\"v\":1,\"a\":[[1]]}", "{\"v\":1,\"a\":{}}", "not json",
        "{\"v\":1,\"x\":17644000000000000000}", "{\"v\":1,\"a\":[[1,18446744073709551616]]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = (struct gust_state_value){0};
        CHECK(parse_envelope(bad[i], strlen(bad[i]), &v, why, sizeof(why)) != 0);
        CHECK(v.applied == NULL && v.json == NULL);
    }
}

static void test_ranges(void)
{
    struct gust_kv_state *s;
    struct gust_kv_state_conf conf = {.unit = "u", .bucket = "B"};
    struct gust_err err;
    CHECK(gust_kv_state_create(&conf, &s, &err) == 0);
    /* The batch's successful messages, out of order, a repeat, one failed, one without
     * a sequence (the edge path). */
    struct gust_msg msgs[8] = {{.stream_seq = 12}, {.stream_seq = 10}, {.stream_seq = 11}, {.stream_seq = 11},
                               {.stream_seq = 20}, {.stream_seq = 14}, {.stream_seq = 0},  {.stream_seq = 15}};
    int outcome[8] = {0, 0, 0, 0, 0, GUST_OUTCOME_RETRY, 0, 0};
    struct gust_batch b = {.msgs = msgs, .n = 8, .outcome = outcome};
    size_t n = batch_ranges(s, &b);
    CHECK(n == 3);
    CHECK(s->ranges[0] == 10 && s->ranges[1] == 12 && s->ranges[2] == 15 && s->ranges[3] == 15 &&
          s->ranges[4] == 20 && s->ranges[5] == 20);
    /* Merged with a key's old ranges: overlaps and neighbours join; the floor cuts. */
    uint64_t old[] = {1, 4, 8, 9, 13, 13, 30, 31};
    uint64_t out[32];
    size_t m = merge_ranges(old, 4, s->ranges, n, 0, out);
    uint64_t want[] = {1, 4, 8, 13, 15, 15, 20, 20, 30, 31};
    CHECK(m == 5 && memcmp(out, want, sizeof(want)) == 0);
    m = merge_ranges(old, 4, s->ranges, n, 9, out);
    uint64_t cut[] = {10, 13, 15, 15, 20, 20, 30, 31};
    CHECK(m == 4 && memcmp(out, cut, sizeof(cut)) == 0);
    m = merge_ranges(old, 4, s->ranges, n, 31, out);
    CHECK(m == 0);
    m = merge_ranges(NULL, 0, NULL, 0, 0, out);
    CHECK(m == 0);
    gust_kv_state_destroy(s);
}

static void test_cache(void)
{
    struct gust_kv_state *s;
    struct gust_kv_state_conf conf = {.unit = "u", .bucket = "B", .cache_bytes = 4096};
    struct gust_err err;
    CHECK(gust_kv_state_create(&conf, &s, &err) == 0);
    uint64_t r[] = {3, 4};
    cache_put(s, "a", 1, "1", 1, 0, 7, r, 1);
    struct cache_entry *e = cache_find(s, "a", 1);
    CHECK(e != NULL && e->revision == 7 && e->napplied == 1 && strcmp(e->json, "1") == 0);
    /* A read of it: copies, expiry applied at the message's time. */
    cache_put(s, "t", 1, "2", 1, 1000, 8, NULL, 0);
    struct gust_state_value v;
    CHECK(copy_out(cache_find(s, "t", 1), 999, 1, &v) == 0 && v.json != NULL && v.revision == 8);
    free(v.json);
    CHECK(copy_out(cache_find(s, "t", 1), 1000, 1, &v) == 0 && v.json == NULL && v.revision == 8);
    /* Forgotten: the next read asks the bucket. */
    cache_forget(s, "a", 1);
    CHECK(cache_find(s, "a", 1)->revision == UINT64_MAX);
    /* Never more than its bytes: when full it starts again. */
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        cache_put(s, key, strlen(key), "123456789", 9, 0, (uint64_t)i + 1, r, 1);
        CHECK(s->cache_used <= s->cache_bytes);
    }
    CHECK(s->ncache > 0 && s->ncache < 200 && cache_find(s, "k199", 4) != NULL);
    gust_kv_state_destroy(s);
    /* No cache: nothing kept. */
    conf.cache_bytes = 0;
    CHECK(gust_kv_state_create(&conf, &s, &err) == 0);
    cache_put(s, "a", 1, "1", 1, 0, 7, NULL, 0);
    CHECK(cache_find(s, "a", 1) == NULL && s->ncache == 0);
    gust_kv_state_destroy(s);
}

/* The bulk load reads KV keys back into state keys: the inverse of gust_kv_state_key,
 * and nothing for another unit's keys or a broken escape. */
static void test_keys_back(void)
{
    struct gust_kv_state s = {.unit = "u"};
    char kvkey[KV_KEY_MAX], back[GUST_STATE_KEY_MAX];
    const char *keys[] = {"dev-1_A", "a.b", "a=2Eb", "sp ace", "caf\xc3\xa9", "*>", "/", "\x01\xff"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        gust_kv_state_key("u", keys[i], strlen(keys[i]), kvkey, sizeof(kvkey));
        size_t n = state_key_of(&s, kvkey, back);
        CHECK(n == strlen(keys[i]) && memcmp(back, keys[i], n) == 0);
    }
    char key[GUST_STATE_KEY_MAX];
    memset(key, 0xfe, sizeof(key));
    gust_kv_state_key("u", key, sizeof(key), kvkey, sizeof(kvkey));
    CHECK(state_key_of(&s, kvkey, back) == sizeof(key) && memcmp(back, key, sizeof(key)) == 0);
    CHECK(state_key_of(&s, "uu.a", back) == 0);
    CHECK(state_key_of(&s, "v.a", back) == 0);
    CHECK(state_key_of(&s, "u.a=4", back) == 0);
    CHECK(state_key_of(&s, "u.a=", back) == 0);
    CHECK(state_key_of(&s, "u.a=00", back) == 0);
    CHECK(state_key_of(&s, "u.=G1", back) == 0);
}

int main(void)
{
    test_keys();
    test_keys_back();
    test_envelope();
    test_ranges();
    test_cache();
    return check_result("test_flow_state");
}
