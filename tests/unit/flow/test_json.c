/* JSON <-> Lua conversion: number text, round trips through a flow, what Lua tables
 * become, and what the decoder refuses. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../check.h"
#include "flow_int.h"
#include "scripts.h"

static locale_t c_locale;

static const char *fmt(double x)
{
    static char out[32];
    size_t n = gust_json_fmt_number(x, out, c_locale);
    out[n] = '\0';
    return out;
}

static void test_number_text(void)
{
    CHECK_STR(fmt(347), "347");
    CHECK_STR(fmt(-12), "-12");
    CHECK_STR(fmt(0), "0");
    CHECK_STR(fmt(-0.0), "-0");
    CHECK_STR(fmt(70.7), "70.7");
    CHECK_STR(fmt(4.5), "4.5");
    CHECK_STR(fmt(0.1), "0.1");
    CHECK_STR(fmt(-2.25), "-2.25");
    CHECK_STR(fmt(0.001), "0.001");
    CHECK_STR(fmt(1e15), "1000000000000000");
    CHECK_STR(fmt(-9007199254740992.0), "-9007199254740992");
    CHECK_STR(fmt(1e17), "1e+17");
    CHECK_STR(fmt(9007199254740994.0), "9007199254740994");
    CHECK_STR(fmt(9007199254740992.0), "9007199254740992");
    CHECK_STR(fmt(1764400000000.123), "1764400000000.123");
    CHECK_STR(fmt(0.1 + 0.2), "0.30000000000000004");
    CHECK_STR(fmt(1e300), "1e+300");
    CHECK_STR(fmt(1.5e-17), "1.5e-17");
    CHECK_STR(fmt(5e-324), "4.94065645841247e-324");
    CHECK_STR(fmt(DBL_MAX), "1.7976931348623157e+308");
    CHECK_STR(fmt(1e19), "1e+19");
    CHECK(gust_json_fmt_number(NAN, (char[32]){0}, c_locale) == 0);
    CHECK(gust_json_fmt_number(INFINITY, (char[32]){0}, c_locale) == 0);
    CHECK(gust_json_fmt_number(-INFINITY, (char[32]){0}, c_locale) == 0);
}

/* The shortest %g precision that reads back: what the output must never exceed. */
static size_t shortest_g(double x, char *out)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, x);
        if (strtod(out, NULL) == x) {
            break;
        }
    }
    return strlen(out);
}

static size_t significant_digits(const char *s)
{
    size_t n = 0, lead = 1, zeros = 0;
    for (; *s != '\0' && *s != 'e'; s++) {
        if (*s >= '1' && *s <= '9') {
            n += zeros + 1;
            zeros = 0;
            lead = 0;
        } else if (*s == '0' && !lead) {
            zeros++; /* counted only if a non-zero digit follows */
        }
    }
    return n == 0 ? 1 : n;
}

/* Every finite double reads back exactly and, subnormals aside, has no more
 * significant digits than the shortest %g form (random bit patterns and random short
 * decimals). */
static void test_number_round_trip(void)
{
    uint64_t seed = 88172645463325252ull;
    int bad = 0;
    for (int i = 0; i < 200000 && bad < 5; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        double x;
        if (i % 2 == 0) {
            memcpy(&x, &seed, sizeof(x));
        } else { /* decimals as people write them: 0..1e9 with 0..6 decimals */
            x = (double)(seed % 1000000000000000ull) / pow(10, (double)((seed >> 60) % 7));
        }
        if (!isfinite(x)) {
            continue;
        }
        char want[32];
        const char *got = fmt(x);
        shortest_g(x, want);
        if (strtod(got, NULL) != x ||
            (fabs(x) >= DBL_MIN && significant_digits(got) > significant_digits(want))) {
            fprintf(stderr, "%.17g: got %s, shortest %s\n", x, got, want);
            bad++;
        }
    }
    CHECK(bad == 0);
}

/* Runs `script` on `input`; returns the payload of its single emit, or the error. */
static char result[4096];

static const char *run_text(const char *script, const char *input)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    if (flow_from_text(script, 0, &f, &err) != 0) {
        snprintf(result, sizeof(result), "load error: %s", err.msg);
        return result;
    }
    int rc = gust_flow_run(f, input, strlen(input), NULL, &out, &err);
    if (rc != 0) {
        snprintf(result, sizeof(result), "error %d: %s", rc, err.msg);
    } else if (out.n != 1) {
        snprintf(result, sizeof(result), "%zu emits", out.n);
    } else {
        CHECK(out.v[0].payload[out.v[0].len] == '\0');
        CHECK(strlen(out.v[0].payload) == out.v[0].len);
        snprintf(result, sizeof(result), "%s", out.v[0].payload);
    }
    gust_emits_free(&out);
    gust_flow_destroy(f);
    return result;
}

#define PASSTHROUGH "return { on_event = function(ev) emit('ev.out', ev) end }"

/* Input text that is already canonical must come back byte for byte. */
static void test_round_trip(void)
{
    static const char *const same[] = {
        "{\"a\":347}",
        "{\"a\":-1}",
        "{\"a\":9007199254740992}",
        "{\"a\":9007199254740993}",
        "{\"a\":-9007199254740993}",
        "{\"a\":123456789012345678901234567890}",
        "{\"a\":1e400}",
        "{\"a\":70.7}",
        "{\"a\":0.1}",
        "{\"a\":1764400000000.123}",
        "{\"a\":0.30000000000000004}",
        "{\"a\":1.5e+300}",
        "{\"a\":[]}",
        "{\"a\":{}}",
        "{}",
        "{\"a\":[[],[{}],{\"b\":[null,true,false]}]}",
        "{\"a\":null}",
        "{\"a\":[1,null,3]}",
        "{\"a\":\"\"}",
        "{\"a\":\"Zo\xc3\xab \xf0\x9f\x98\x80 \\\" \\\\ \\n \\t \\r \\b \\f \\u0001 \\u001f / \x7f\"}",
        "{\"\\u0000k\\n\":1}",
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        CHECK_STR(run_text(PASSTHROUGH, same[i]), same[i]);
    }
    /* Equal values in another spelling come out canonical. */
    CHECK_STR(run_text(PASSTHROUGH, " { \"a\" : 1.0e3 } "), "{\"a\":1000}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":1E15}"), "{\"a\":1000000000000000}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":-0}"), "{\"a\":-0}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":-0.0}"), "{\"a\":-0}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":-0e5}"), "{\"a\":-0}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":0.000e-999}"), "{\"a\":0}");
    /* A number a double cannot hold keeps its text: overflow and underflow alike. */
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":1e-400}"), "{\"a\":1e-400}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":-2.5E-999}"), "{\"a\":-2.5E-999}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":-1e400}"), "{\"a\":-1e400}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":5e-324}"), "{\"a\":4.94065645841247e-324}"); /* subnormal */
    CHECK_CONTAINS(run_text("return { on_event = function(ev) emit('ev.out', {v = 1 / ev.a}) end }", "{\"a\":-0}"),
                   "cannot encode NaN or infinity"); /* 1 / -0 is -inf: the sign was kept */
    /* Lone surrogate escapes are U+FFFD; nothing around them is lost. */
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"\\ud800abc\"}"), "{\"a\":\"\xef\xbf\xbd" "abc\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"\\ud800\\\\\"}"), "{\"a\":\"\xef\xbf\xbd\\\\\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"x\\udc00y\"}"), "{\"a\":\"x\xef\xbf\xbdy\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"\\ud800\\u0041\"}"), "{\"a\":\"\xef\xbf\xbd" "A\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"\\ud800\\ud800\\udc00\"}"),
              "{\"a\":\"\xef\xbf\xbd\xf0\x90\x80\x80\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"\\udfff\":1}"), "{\"\xef\xbf\xbd\":1}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":4.50}"), "{\"a\":4.5}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":\"\\u00e9\\/\\ud83d\\ude00\"}"),
              "{\"a\":\"\xc3\xa9/\xf0\x9f\x98\x80\"}");
    CHECK_STR(run_text(PASSTHROUGH, "{\"a\":1,\"a\":2}"), "{\"a\":2}");
}

/* What tables built in Lua become. */
static void test_lua_tables(void)
{
#define EMIT(expr) "return { on_event = function(ev) emit('ev.out', { v = " expr " }) end }"
    CHECK_STR(run_text(EMIT("{1, 2, 3}"), "{}"), "{\"v\":[1,2,3]}");
    CHECK_STR(run_text(EMIT("{}"), "{}"), "{\"v\":{}}");
    CHECK_STR(run_text(EMIT("array({})"), "{}"), "{\"v\":[]}");
    CHECK_STR(run_text(EMIT("json.array({})"), "{}"), "{\"v\":[]}");
    CHECK_STR(run_text(EMIT("array({1, null, 3})"), "{}"), "{\"v\":[1,null,3]}");
    const char *sparse = run_text(EMIT("{[1] = 'a', [3] = 'c'}"), "{}");
    CHECK_CONTAINS(sparse, "\"1\":\"a\"");
    CHECK_CONTAINS(sparse, "\"3\":\"c\"");
    CHECK_STR(run_text(EMIT("{[2.5] = 1}"), "{}"), "{\"v\":{\"2.5\":1}}");
    CHECK_STR(run_text(EMIT("{[0] = 1}"), "{}"), "{\"v\":{\"0\":1}}");
    CHECK_STR(run_text(EMIT("{null, json.null}"), "{}"), "{\"v\":[null,null]}");
    CHECK_STR(run_text(EMIT("347.0"), "{}"), "{\"v\":347}");
    CHECK_STR(run_text(EMIT("9900 / 100"), "{}"), "{\"v\":99}");
    CHECK_STR(run_text(EMIT("450 / 100"), "{}"), "{\"v\":4.5}");
    CHECK_STR(run_text(EMIT("true"), "{}"), "{\"v\":true}");
    CHECK_STR(run_text(EMIT("'a\\0b'"), "{}"), "{\"v\":\"a\\u0000b\"}");
    /* A string Lua built that is not UTF-8 never goes out: surrogates, overlong forms,
     * beyond U+10FFFF. */
    CHECK_CONTAINS(run_text(EMIT("'\\237\\160\\128'"), "{}"), "not valid UTF-8");
    CHECK_CONTAINS(run_text(EMIT("'\\192\\175'"), "{}"), "not valid UTF-8");
    CHECK_CONTAINS(run_text(EMIT("'\\244\\144\\128\\128'"), "{}"), "not valid UTF-8");
    CHECK_STR(run_text(EMIT("'\\237\\159\\191'"), "{}"), "{\"v\":\"\xed\x9f\xbf\"}");
    CHECK_STR(run_text(EMIT("setmetatable({}, {__index = function() return 1 end})"), "{}"), "{\"v\":{}}");
    /* Decoded tables keep their kind when the script empties or fills them. */
    const char *emptied = run_text("return { on_event = function(ev) ev.o.x = nil; "
                                   "ev.a[1] = nil; emit('ev.out', ev) end }",
                                   "{\"o\":{\"x\":1},\"a\":[1]}");
    CHECK_CONTAINS(emptied, "\"o\":{}");
    CHECK_CONTAINS(emptied, "\"a\":[]");
    CHECK_STR(run_text("return { on_event = function(ev) ev.o[1] = 'x'; ev.o[2] = 'y'; "
                       "emit('ev.out', ev.o) end }",
                       "{\"o\":{}}"),
              "{\"1\":\"x\",\"2\":\"y\"}");
    CHECK_STR(run_text("return { on_event = function(ev) ev.a[#ev.a + 1] = 2; "
                       "emit('ev.out', ev) end }",
                       "{\"a\":[1]}"),
              "{\"a\":[1,2]}");
#undef EMIT
}

static void test_bignums_and_json_table(void)
{
    /* Bignums: tostring, .., ==, and they keep their text through json.encode. */
    const char *script =
        "return { on_event = function(ev)\n"
        "  emit('ev.out', { s = tostring(ev.id), c = 'id:' .. ev.id .. '!', eq = ev.id == ev.same,\n"
        "    ne = ev.id == ev.other, ty = type(ev.id), n = tonumber(ev.id) or 'nil',\n"
        "    enc = json.encode({ ev.id }) })\n"
        "end }";
    const char *got = run_text(script, "{\"id\":12345678901234567891,\"same\":12345678901234567891,"
                                       "\"other\":12345678901234567892}");
    CHECK_CONTAINS(got, "\"s\":\"12345678901234567891\"");
    CHECK_CONTAINS(got, "\"c\":\"id:12345678901234567891!\"");
    CHECK_CONTAINS(got, "\"eq\":true");
    CHECK_CONTAINS(got, "\"ne\":false");
    CHECK_CONTAINS(got, "\"ty\":\"userdata\"");
    CHECK_CONTAINS(got, "\"n\":\"nil\"");
    CHECK_CONTAINS(got, "\"enc\":\"[12345678901234567891]\"");

    /* json.decode / json.encode from a script. */
    const char *codec =
        "return { on_event = function(ev)\n"
        "  local v, err = json.decode(ev.text)\n"
        "  local bad, bad_err = json.decode('{\"a\":')\n"
        "  emit('ev.out', { v = v, again = json.encode(v), bad = bad == nil, bad_err = bad_err,\n"
        "    scalar = json.decode('5'), null = json.decode('null') == null })\n"
        "end }";
    got = run_text(codec, "{\"text\":\"[[], {}, 1e400, \\\"x\\\"]\"}");
    CHECK_CONTAINS(got, "\"v\":[[],{},1e400,\"x\"]");
    CHECK_CONTAINS(got, "\"again\":\"[[],{},1e400,\\\"x\\\"]\"");
    CHECK_CONTAINS(got, "\"bad\":true");
    CHECK_CONTAINS(got, "\"bad_err\":\"invalid JSON: ");
    CHECK_CONTAINS(got, "\"scalar\":5");
    CHECK_CONTAINS(got, "\"null\":true");
}

static void test_invalid_input(void)
{
    static const char *const bad[] = {
        "",
        " ",
        "[]",
        "1",
        "\"s\"",
        "null",
        "{",
        "{\"a\":}",
        "{}{}",
        "{} x",
        "{\"a\":1,}",
        "{'a':1}",
        "{\"a\":1} // c",
        "{\"a\":\"\xff\"}",
        "{\"a\":\"\xc3\"}",
        "{\"a\":\"\x01\"}",
        "{\"a\":01}",
        "{\"a\":NaN}",
        /* RFC 8259 forbids these; yajl alone would take them. */
        "{\"v\":[\f]}",
        "{\f\"a\":1}",
        "{\"a\":1}\v",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"\xe0\x80\x80\":1}",
        "{\"?a\":[]}\"?]][[", /* yajl takes a value followed by an unterminated string */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *got = run_text(PASSTHROUGH, bad[i]);
        char want[32];
        snprintf(want, sizeof(want), "error %d: invalid JSON: ", GUST_EINVAL);
        if (strncmp(got, want, strlen(want)) != 0) {
            fprintf(stderr, "input %zu \"%s\": %s\n", i, bad[i], got);
            CHECK(!"invalid input accepted");
        }
    }
    CHECK_STR(run_text(PASSTHROUGH, "[]"), "error -1: invalid JSON: expected a JSON object");
    CHECK_CONTAINS(run_text(PASSTHROUGH, "{\"a\":\"\xed\xa0\x80\"}"), "invalid UTF-8 (");
    CHECK_CONTAINS(run_text(PASSTHROUGH, "{\"a\":\"\xed\xa0\x80\"}"), "at byte 6");
    CHECK_CONTAINS(run_text(PASSTHROUGH, "{\"v\":[\f]}"), "form feed");

    /* Nesting: GUST_JSON_MAX_DEPTH containers decode, one more does not. */
    char deep[2 * GUST_JSON_MAX_DEPTH + 8];
    for (int depth = GUST_JSON_MAX_DEPTH; depth <= GUST_JSON_MAX_DEPTH + 1; depth++) {
        size_t n = 0;
        deep[n++] = '{';
        deep[n++] = '"';
        deep[n++] = 'a';
        deep[n++] = '"';
        deep[n++] = ':';
        for (int i = 1; i < depth; i++) {
            deep[n++] = '[';
        }
        for (int i = 1; i < depth; i++) {
            deep[n++] = ']';
        }
        deep[n++] = '}';
        deep[n] = '\0';
        const char *got = run_text("return { on_event = function(ev) emit('ev.out', {}) end }", deep);
        if (depth == GUST_JSON_MAX_DEPTH) {
            CHECK_STR(got, "{}");
        } else {
            CHECK_STR(got, "error -1: invalid JSON: nested too deeply");
        }
    }
}

int main(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    test_number_text();
    test_number_round_trip();
    test_round_trip();
    test_lua_tables();
    test_bignums_and_json_table();
    test_invalid_input();
    freelocale(c_locale);
    return check_result("test_json");
}
