/* libFuzzer target for the host.conf parser and schema check.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_XOPEN_SOURCE=700 \
 *       -Ihost/include -Ihost/conf tests/unit/conf/fuzz_conf.c \
 *       $(find host/conf -name '*.c') host/common/{err,rate,time}.c -o /tmp/fuzz_conf
 *   mkdir -p /tmp/fuzz-corpus && /tmp/fuzz_conf -max_total_time=300 /tmp/fuzz-corpus \
 *       $PWD/tests/unit/conf/data
 *
 * (or cmake -DGUST_FUZZ=ON with CC=clang). Give corpus directories as absolute paths:
 * the target changes directory before libFuzzer reads them.
 *
 * The parser reads the files that include names, so the fuzzer runs in a scratch
 * directory of small fixtures and skips inputs that could name anything outside it (an
 * include with '/' or '$' in the input); otherwise a glob such as /x/x/x could walk
 * the whole disk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "conf_schema.h"
#include "subject.h"
#include "value.h"

static const struct gust_schema_key schema[] = {
    {"s", GUST_T_STR, "x", 0, "", 0},
    {"i", GUST_T_INT, "1", 0, "", 0},
    {"b", GUST_T_BOOL, "on", 0, "", 0},
    {"z", GUST_T_SIZE, "1k", 0, "", 0},
    {"d", GUST_T_DURATION, "1s", 0, "", 0},
    {"p", GUST_T_PATH, "p", 0, "", 0},
    {"subj", GUST_T_SUBJECT, "a.b", 0, "", 0},
    {"f", GUST_T_FILTER, "a.>", 0, "", 0},
    {"l", GUST_T_LIST, "a b", 0, "", 0},
    {"a", GUST_T_ADDR, "h:1", 0, "", 0},
    {"r", GUST_T_RATE, "1/s", 0, "", 0},
    {"u", GUST_T_URL, "http://h:1/x", 0, "", 0, 0, 0, "http|https"},
    {"q", GUST_T_RATIO, "0.5", 0, "", 0},
    GUST_KEY_END,
};

static const char *const fixtures[][2] = {
    {"a.conf", "x 1;\ninclude b.conf;\n"},
    {"b.conf", "y {\n    z 2;\n}\n"},
    {"self.conf", "include self.conf;\n"},
    {"all.conf", "include [ab].conf;\n"},
};

static char dir[] = "/tmp/gust-fuzz-conf-XXXXXX";

static void remove_fixtures(void)
{
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        unlink(fixtures[i][0]);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
        perror("fuzz_conf: scratch directory");
        exit(1);
    }
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        FILE *f = fopen(fixtures[i][0], "w");
        if (f == NULL || fputs(fixtures[i][1], f) < 0 || fclose(f) != 0) {
            perror("fuzz_conf: fixture");
            exit(1);
        }
    }
    atexit(remove_fixtures);
    setenv("GUST_FUZZ", "v", 1);
    return 0;
}

static int names_outside(const uint8_t *data, size_t size)
{
    static const char inc[] = "include";
    int has_include = 0;
    for (size_t i = 0; i + sizeof(inc) - 1 <= size && !has_include; i++) {
        has_include = memcmp(data + i, inc, sizeof(inc) - 1) == 0;
    }
    return has_include && (memchr(data, '/', size) || memchr(data, '$', size));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gust_conf *c = NULL;
    struct gust_err err;

    gust_subject_valid((const char *)data, size, 1);
    /* The URL shape check on the whole input too: the schema reaches it only through the
     * lexer, which keeps most bytes out of a value. */
    char text[1024], scheme[32];
    if (size < sizeof(text)) {
        memcpy(text, data, size);
        text[size] = '\0';
        (void)gust_parse_url(text, scheme, sizeof(scheme));
    }
    if (names_outside(data, size)) {
        return 0;
    }
    if (gust_conf_parse_string((const char *)data, size, "fuzz.conf", &c, &err) != 0) {
        return 0;
    }
    for (size_t i = 0; i < c->root.nchildren; i++) {
        struct gust_cfg *cfg = NULL;
        if (gust_cfg_check(&c->root.children[i], "fuzz", schema, NULL, &cfg, &err) == 0) {
            gust_cfg_str(cfg, "s");
            gust_cfg_item(cfg, "l", 1);
            gust_cfg_where(cfg, "i");
        }
        gust_cfg_destroy(cfg);
    }
    gust_conf_destroy(c);
    return 0;
}
