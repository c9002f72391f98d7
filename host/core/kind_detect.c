/* The detect kind: a VPL program on the consumer core, read in stream order, its state
 * checkpointed and its slices held under leases (unit/detect_handler.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/lease.h"
#include "../common/buf.h"
#include "../common/file.h"
#include "../common/log.h"
#include "../unit/handlers.h"
#include "config_digest.h"
#include "edges.h"
#include "kind.h"
#include "rule_test.h"
#include "unit_start.h"

static const struct gust_schema_key detect_schema[] = {
    GUST_UNIT_KEY(rules, PATH, NULL, GUST_K_REQUIRED, "the VPL program"),
    GUST_UNIT_KEY(batch, INT, "256", 0, "messages fetched at once"),
    GUST_UNIT_KEY_RANGE(slices, INT, "1", 0, 1, 1024,
         "the program's partitions are split into this many slices, each kept by one process of a cluster at a time "
         "(under a lease)"),
    GUST_UNIT_KEY(checkpoint_interval, DURATION, "5s", 0,
         "the engine's state is checkpointed at least this often once it changed (0: only at a clean stop)"),
    GUST_UNIT_KEY(checkpoint_events, INT, "100000", 0, "... and after this many events (0: no bound)"),
    GUST_UNIT_KEY_RANGE(idle_tick, DURATION, "0", GUST_K_ZERO_OFF, 100, 3600000,
         "while the input is quiet this long, the clocks move with wall time (minus this grace), so windows close "
         "and absences fire without a later event; each tick is stored on the input first, so replays make the same "
         "alerts (0: off, the clocks move with events only)"),
    GUST_UNIT_KEY(tests, PATH, NULL, 0,
         "a folder of rule tests (gust vpl-test cases: CASE.json files, or folders with events.jsonl and "
         "expected.jsonl) that gust -t runs against the rules"),
    GUST_EDGE_KEYS(GUST_UNIT_KEY, GUST_UNIT_KEY_RANGE),
    GUST_KEY_END,
};

/* Reads and compiles a detect unit's program: with bus and leases NULL only to check it
 * (gust -t, a reload's preparation). */
static int load_detect(const struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus,
                       struct gust_leases *leases, struct gust_handler *h, char **filter, struct gust_err *err)
{
    struct gust_lease_port port = leases != NULL ? gust_leases_port(leases) : (struct gust_lease_port){0};
    const char *path = u->k.rules;
    struct gust_buf src = {0};
    int rc = gust_file_read(path, &src);
    if (rc != 0) {
        gust_buf_free(&src);
        return gust_err_set(err, GUST_ECONFIG, "%s: detect '%s': cannot read %s", gust_cfg_where(u->cfg, "rules"),
                            u->name, path);
    }
    int64_t slices = u->k.slices;
    struct gust_detect_opts o = {
        .unit = u->name,
        .prefix = host->config->subject_prefix,
        .path = path,
        .src = src.data != NULL ? src.data : "",
        .len = src.len,
        .slices = (uint32_t)slices,
        .checkpoint_interval_ms = u->k.checkpoint_interval,
        .checkpoint_events = u->k.checkpoint_events,
        .idle_tick_ms = u->k.idle_tick,
        .stream = host->config->nats.stream,
        .edge = u->k.edge != NULL,
        .bus = bus,
        .leases = leases != NULL ? &port : NULL,
    };
    rc = gust_detect_handler_create(&o, h, filter, err);
    gust_buf_free(&src);
    if (rc != 0 && slices > 1 && strstr(err->msg, "slices") != NULL) {
        /* Name the line of the setting the program cannot take. */
        struct gust_err plain = *err;
        gust_err_set(err, rc, "%s: %s", gust_cfg_where(u->cfg, "slices"), plain.msg);
    } else if (rc != 0 && u->k.edge != NULL && strstr(err->msg, "edge path") != NULL) {
        struct gust_err plain = *err;
        gust_err_set(err, rc, "%s: %s", gust_cfg_where(u->cfg, "edge"), plain.msg);
    }
    return rc;
}

static int check_detect(struct gust_host *host, struct gust_unit_conf *u, struct gust_err *err)
{
    struct gust_handler h;
    char *filter = NULL;
    int rc = load_detect(host, u, NULL, NULL, &h, &filter, err);
    if (rc == 0) {
        h.destroy(h.impl);
        free(filter);
    }
    return rc;
}

/* gust -t: the block's `tests DIR;` run against its rules (the cases' results on
 * stderr). */
static int test_detect(const struct gust_unit_conf *u, struct gust_err *err)
{
    if (u->k.tests == NULL) {
        return 0;
    }
    int passed = 0, failed = 0;
    if (gust_rule_test_dir(u->k.rules, u->k.tests, stderr, &passed, &failed) != GUST_RULE_TEST_PASS) {
        return gust_err_set(err, GUST_ECONFIG, "%s: detect '%s': %d of %d rule tests failed (above)",
                            gust_cfg_where(u->cfg, "tests"), u->name, failed, passed + failed);
    }
    return 0;
}

/* Kept running from the generation before when it is the same unit (its block and its
 * program unchanged: state and all), else made anew. */
static int start_detect(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                        struct gust_err *err)
{
    (void)state;
    char identity[GUST_DIGEST_LEN + 1];
    gust_unit_digest(u, identity);
    struct gust_consumer *kept = gust_units_adopt(host->units, u->name);
    if (kept != NULL) {
        struct gust_edge *e = gust_consumer_edge(kept);
        if (e != NULL && gust_edge_links_add(&host->edges, u->k.edge, e) != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        gust_info("[detect_%s] unchanged: kept running, state and all", u->name);
        return 0;
    }
    struct gust_handler h;
    char *filter = NULL;
    int rc = load_detect(host, u, bus, host->leases, &h, &filter, err);
    if (rc == 0) {
        struct gust_unit_start s = {
            .filter = filter,
            .identity = identity,
            .batch = u->k.batch,
            .ordered = 1,
            .listed = gust_detect_handler_start,
        };
        rc = gust_unit_start(host, u, &s, h, bus, err);
        free(filter);
    }
    return rc;
}

static const char *const detect_files[] = {"rules", NULL};

const struct gust_kind gust_kind_detect = {
    .name = "detect",
    .help = "",
    .schema = detect_schema,
    .flags = GUST_KIND_KEPT,
    .file_keys = detect_files,
    .check = check_detect,
    .test = test_detect,
    .start = start_detect,
};
