/* Declarative configuration schemas, bound into structs.
 *
 * The host checks every block of host.conf against a schema before anything sees it:
 * unknown keys, missing required keys and values of the wrong type are errors that
 * name file:line. The same table says where each value goes (offsetof into the owner's
 * struct), so code reads `conf->max_body`, never a key by name: a misspelt field is a
 * compile error. It also feeds `gust --help` and gust-host.conf(5), and decides what a reload
 * may change (GUST_K_RELOADABLE). Plugins declare their keys the same way and bind them
 * through the host API (gust/sdk.h: gust_sdk_bind). */
#ifndef GUST_SCHEMA_H
#define GUST_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

enum gust_type {
    GUST_T_STR = 1,  /* one argument, any text */
    GUST_T_INT,      /* decimal integer */
    GUST_T_BOOL,     /* on|off|true|false|yes|no */
    GUST_T_SIZE,     /* bytes: 512, 64k, 1m, 2g */
    GUST_T_DURATION, /* milliseconds: 250ms, 5s, 2m, 1h; a bare number is ms */
    GUST_T_PATH,     /* a file path, relative to the directory of host.conf */
    GUST_T_SUBJECT,  /* a NATS subject without wildcards */
    GUST_T_FILTER,   /* a NATS subject that may hold * and > */
    GUST_T_LIST,     /* one or more arguments, or the key repeated */
    GUST_T_ADDR,     /* host:port */
    /* ABI 1.3: a name NATS takes as it is, in a consumer, stream, bucket or KV key:
     * 1 to 64 letters, digits, '_' and '-'. Refused, never renamed: a renamed name could
     * collide with another (a"b and a_b). */
    GUST_T_NAME,
    /* ABI 1.8: requests or events over time, N/s, N/m or N/h (N > 0, a decimal number
     * allowed: 0.5/s); binds to a double, per second. */
    GUST_T_RATE,
    /* ABI 1.8: scheme://[user[:password]@]host[:port][/path...]; `choices` lists the
     * schemes the key accepts ("http|https"; NULL: any). The host checks the shape and
     * the scheme, the plugin's library the rest. Its errors never repeat the value: a
     * URL may hold a password. */
    GUST_T_URL,
    /* ABI 1.8: a share from 0 to 1 as a plain decimal (1.0, 0.01); binds to a double. */
    GUST_T_RATIO,
};

enum {
    GUST_K_REQUIRED = 1 << 0,
    /* A reload applies a new value. The process-wide blocks (top level, http, nats) are
     * built once: a reload that changes a key without this flag is refused, naming the
     * key and its file:line, and the running generation keeps serving. Unit blocks and
     * plugin instances are rebuilt at every reload, so all their keys are reloadable. */
    GUST_K_RELOADABLE = 1 << 1,
    GUST_K_SECRET = 1 << 2, /* never logged or shown */
    GUST_K_BOUND = 1 << 3,  /* ABI 1.1: `offset` says where the binder writes the value */
    /* ABI 1.3: an INT, SIZE or DURATION value must lie within [min, max]; 0 is also
     * accepted when GUST_K_ZERO_OFF is set too (0 meaning "off"). The host checks it,
     * naming file:line, and --help and the man page show the bounds. */
    GUST_K_RANGE = 1 << 4,
    GUST_K_ZERO_OFF = 1 << 5,
    /* ABI 1.5, on a LIST key `k`: the block takes `k.NAME VALUE;` statements, any NAME,
     * each appending NAME and VALUE to the list (pairs, in the order written), for a
     * library's own settings passed through (kafka's `rdkafka.session.timeout.ms 30000;`).
     * `k` alone is refused. */
    GUST_K_PREFIX = 1 << 6,
    /* The plugin renders the value as a template (gust_tpl_compile): a {secret:PATH#KEY}
     * in it is resolved at each render, so a rotated secret is in force at once. A
     * GUST_K_SECRET key without this flag has its {secret:…} references replaced by their
     * values before create, when the unit starts (a rotation then needs a reload). Hosts
     * without secret stores ignore the flag. */
    GUST_K_TEMPLATE = 1 << 7,
};

/* Where a bound value goes, by type:
 *   STR PATH SUBJECT FILTER ADDR NAME URL  const char *  (NULL when absent without a default)
 *   INT SIZE DURATION             int64_t        (SIZE in bytes, DURATION in ms)
 *   RATE RATIO                    double         (RATE per second; 0 when absent)
 *   BOOL                          int            (0 or 1)
 *   LIST                          struct gust_list
 * Strings point into the checked configuration and live as long as it does. */
struct gust_list {
    const char *const *items;
    size_t n;
};

struct gust_schema_key {
    const char *key;
    enum gust_type type;
    const char *def;  /* default as written in host.conf, or NULL */
    unsigned flags;   /* GUST_K_* */
    const char *help; /* one line for --help and gust-host.conf(5) */
    /* ABI 1.1 (a 1.0 table ends before it: the host honours the plugin's element size). */
    size_t offset; /* with GUST_K_BOUND: offsetof(owner struct, field) */
    /* ABI 1.3 (older tables end before it and read as zero: no bounds, no choices). */
    int64_t min, max;    /* with GUST_K_RANGE, in the normalised unit: bytes, ms */
    const char *choices; /* a STR key: the words it accepts, a URL key: its schemes, '|'-separated ("text|json") */
};

/* A table ends with an entry whose key is NULL. */
#define GUST_KEY_END {NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL}

/* The C type each gust_type binds to (used by GUST_KEY's compile-time check). */
#define GUST__CTYPE_STR const char *
#define GUST__CTYPE_PATH const char *
#define GUST__CTYPE_SUBJECT const char *
#define GUST__CTYPE_FILTER const char *
#define GUST__CTYPE_ADDR const char *
#define GUST__CTYPE_NAME const char *
#define GUST__CTYPE_URL const char *
#define GUST__CTYPE_RATE double
#define GUST__CTYPE_RATIO double
#define GUST__CTYPE_INT int64_t
#define GUST__CTYPE_SIZE int64_t
#define GUST__CTYPE_DURATION int64_t
#define GUST__CTYPE_BOOL int
#define GUST__CTYPE_LIST struct gust_list

/* offsetof(S, field), and a compile error when the field does not exist or its type is
 * not the one T binds to (_Generic has no matching association). */
#define GUST__AT(S, field, T) (offsetof(S, field) + 0 * _Generic(((S *)0)->field, GUST__CTYPE_##T: 1))

/* One bound key named like its field:
 *   GUST_KEY(struct http_out_conf, url, STR, NULL, GUST_K_REQUIRED, "where to POST")
 * T is the gust_type without its GUST_T_ prefix. GUST_KEY_AS names the key apart from
 * the field, for a key that is not a C identifier. */
#define GUST_KEY_AS(S, field, name, T, def, flags, help) \
    {name, GUST_T_##T, def, (flags) | GUST_K_BOUND, help, GUST__AT(S, field, T), 0, 0, NULL}
#define GUST_KEY(S, field, T, def, flags, help) GUST_KEY_AS(S, field, #field, T, def, flags, help)
/* A bound INT, SIZE or DURATION key whose value must lie within [lo, hi] (bytes, ms):
 *   GUST_KEY_RANGE(struct c, timeout, DURATION, "5s", 0, 10, INT64_MAX, "...")
 * Add GUST_K_ZERO_OFF to flags to accept 0 as well. */
#define GUST_KEY_RANGE(S, field, T, def, flags, lo, hi, help) \
    {#field, GUST_T_##T, def, (flags) | GUST_K_BOUND | GUST_K_RANGE, help, GUST__AT(S, field, T), lo, hi, NULL}
/* A bound URL key that accepts the '|'-separated schemes of `schemes`. */
#define GUST_KEY_URL_AS(S, field, name, def, flags, schemes, help) \
    {name, GUST_T_URL, def, (flags) | GUST_K_BOUND, help, GUST__AT(S, field, URL), 0, 0, schemes}
#define GUST_KEY_URL(S, field, def, flags, schemes, help) GUST_KEY_URL_AS(S, field, #field, def, flags, schemes, help)
/* A bound STR key that accepts one of the '|'-separated words of `words`. */
#define GUST_KEY_ENUM(S, field, def, flags, words, help) \
    {#field, GUST_T_STR, def, (flags) | GUST_K_BOUND, help, GUST__AT(S, field, STR), 0, 0, words}

/* A checked set of values for one block. Values are read through these
 * accessors; a key that is absent and has no default reads as NULL / 0 / 0 items.
 * Reading a key the block's schema does not declare is a bug and aborts the process
 * (with the key and the block on stderr), so any test that reaches the read fails.
 * Numbers come back normalised: SIZE in bytes, DURATION in milliseconds, BOOL 0/1. */
struct gust_cfg;
const char *gust_cfg_str(const struct gust_cfg *cfg, const char *key);
int64_t gust_cfg_int(const struct gust_cfg *cfg, const char *key);
size_t gust_cfg_count(const struct gust_cfg *cfg, const char *key);
const char *gust_cfg_item(const struct gust_cfg *cfg, const char *key, size_t i);
/* "file:line" of the key (or of the block when the key is absent), for messages. */
const char *gust_cfg_where(const struct gust_cfg *cfg, const char *key);

/* Writes every GUST_K_BOUND key of schema (entries key_size bytes apart, as the caller
 * was built: sizeof(struct gust_schema_key)) into the struct at out. Keys missing from
 * cfg are an error (the schema is not the one cfg was checked against). Returns 0 or
 * GUST_EINVAL with err naming the key. */
int gust_cfg_bind(const struct gust_cfg *cfg, const struct gust_schema_key *schema, size_t key_size, void *out,
                  struct gust_err *err);

#endif
