/* Declarative configuration schemas.
 *
 * The host checks every block of host.conf against a schema before anything sees it:
 * unknown keys, missing required keys and values of the wrong type are errors that
 * name file:line. Plugins declare their keys with the same table, which also feeds
 * `gust --help`. */
#ifndef GUST_SCHEMA_H
#define GUST_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

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
};

enum {
    GUST_K_REQUIRED = 1 << 0,
    GUST_K_RELOADABLE = 1 << 1, /* can change on reload without recreating the instance */
    GUST_K_SECRET = 1 << 2,     /* never logged or shown */
};

struct gust_schema_key {
    const char *key;
    enum gust_type type;
    const char *def;  /* default as written in host.conf, or NULL */
    unsigned flags;   /* GUST_K_* */
    const char *help; /* one line for --help and the README */
};

/* A table ends with an entry whose key is NULL. */

/* A checked set of values for one block. Values are read through these
 * accessors; a key that is absent and has no default reads as NULL / 0 / 0 items.
 * Numbers come back normalised: SIZE in bytes, DURATION in milliseconds, BOOL 0/1. */
struct gust_cfg;
const char *gust_cfg_str(const struct gust_cfg *cfg, const char *key);
int64_t gust_cfg_int(const struct gust_cfg *cfg, const char *key);
size_t gust_cfg_count(const struct gust_cfg *cfg, const char *key);
const char *gust_cfg_item(const struct gust_cfg *cfg, const char *key, size_t i);
/* "file:line" of the key (or of the block when the key is absent), for messages. */
const char *gust_cfg_where(const struct gust_cfg *cfg, const char *key);

#endif
