/* A unit kind added as docs/ARCHITECTURE.md's recipe "Add a unit kind" says: the stamp
 * kind below is all of it (what would be host/core/kind_stamp.c), and the table after
 * it is its registration line, with nothing else of the host touched. Then host.conf
 * takes its blocks with their keys, bounds and file:line errors; gust -t runs its check;
 * a generation starts and stops it; --help prints its keys; the config digest reads the
 * file it names.
 *
 * The registration: this file's gust_kinds stands for host/core/kinds.c's. The linker
 * takes a static library's member only for a symbol still undefined, so kinds.o, which
 * defines nothing else, is never taken from libgust_core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../host/core/config_digest.h"
#include "../../../host/core/help.h"
#include "../../../host/core/host.h"
#include "../../../host/core/kinds.h"
#include "../../../host/secret/secret.h"
#include "../../check.h"

/* ---- host/core/kind_stamp.c, as a new kind's author would write it ---- */

struct stamp_keys {
    const char *to;
    int64_t every;
    const char *file;
};

static const struct gust_schema_key stamp_schema[] = {
    GUST_KIND_KEY(struct stamp_keys, to, SUBJECT, NULL, GUST_K_REQUIRED, "where each stamp goes"),
    GUST_KIND_KEY_RANGE(struct stamp_keys, every, DURATION, "1s", 0, 100, 3600000, "how often"),
    GUST_KIND_KEY(struct stamp_keys, file, PATH, NULL, 0, "a template of the stamp"),
    GUST_KEY_END,
};

static int checks, starts, stops;

/* What a schema cannot say: the subject must be one the event stream takes. */
static int check_stamp(struct gust_host *host, struct gust_unit_conf *u, struct gust_err *err)
{
    const struct stamp_keys *k = u->keys;
    const char *prefix = host->config->subject_prefix;
    checks++;
    if (strncmp(k->to, prefix, strlen(prefix)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: stamp '%s': %s is not under the stream's subjects (%s)",
                            gust_cfg_where(u->cfg, "to"), u->name, k->to, prefix);
    }
    return 0;
}

struct stamp {
    int64_t every;
};

static int start_stamp(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                       struct gust_err *err)
{
    (void)host;
    (void)bus;
    struct stamp *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    s->every = ((const struct stamp_keys *)u->keys)->every;
    *state = s;
    starts++;
    return 0;
}

static void stop_stamp(struct gust_host *host, const struct gust_unit_conf *u, void *state)
{
    (void)host;
    (void)u;
    free(state);
    stops++;
}

static const char *const stamp_files[] = {"file", NULL};

const struct gust_kind gust_kind_stamp = {
    .name = "stamp",
    .help = "",
    .schema = stamp_schema,
    .keys_size = sizeof(struct stamp_keys),
    .file_keys = stamp_files,
    .check = check_stamp,
    .start = start_stamp,
    .stop = stop_stamp,
};

/* ---- its registration: GUST_KINDS(X) ... X(stamp) ---- */

#define KIND_ENTRY(n) &gust_kind_##n,
const struct gust_kind *const gust_kinds[] = {GUST_KINDS(KIND_ENTRY) &gust_kind_stamp, NULL};

/* ---- the test ---- */

static char dir[64];

static const char *write_file(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Prepares host.conf holding text: 0 or the error, in err. */
static int prepare(struct gust_host *host, const char *text, struct gust_err *err)
{
    memset(host, 0, sizeof(*host));
    memset(err, 0, sizeof(*err));
    return gust_host_prepare(host, write_file("host.conf", text), err);
}

static void test_config(void)
{
    struct gust_host host;
    struct gust_err err;
    checks = 0;
    int rc = prepare(&host, "stamp beat { to ev.beat; every 2s; }\nrelay r { source ev.a; to ev.b; }\n", &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc == 0) {
        const struct gust_unit_conf *u = &host.config->units[0];
        const struct stamp_keys *k = u->keys;
        CHECK(host.config->nunits == 2);
        CHECK(u->kind == &gust_kind_stamp && strcmp(u->name, "beat") == 0);
        CHECK(k != NULL && k->every == 2000 && strcmp(k->to, "ev.beat") == 0);
        CHECK(host.config->units[1].kind == &gust_kind_relay && host.config->units[1].keys == NULL);
        CHECK(checks == 1);
    }
    gust_host_release(&host);

    static const struct {
        const char *conf;
        const char *error; /* what err.msg must hold */
    } bad[] = {
        {"\nstamp beat { every 2s; }\n", "host.conf:2"},                    /* `to` is required */
        {"stamp beat { to ev.x; every 5ms; }\n", "every"},                  /* under its bound */
        {"stamp beat { to ev.x; colour red; }\n", "colour"},                /* not its key */
        {"stamp beat { to ev.x; }\nstamp beat { to ev.y; }\n", "already defined"},
        {"nats { subjects ev.>; }\nstamp beat {\n to other.x;\n}\n", "host.conf:3: stamp 'beat': other.x is not"},
        {"stomp beat { to ev.x; }\n", "stomp"}, /* no such kind */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = prepare(&host, bad[i].conf, &err);
        CHECK(rc != 0 && strstr(err.msg, bad[i].error) != NULL, "case %zu: %s", i, err.msg);
        gust_host_release(&host);
    }
}

/* A generation starts the unit through its kind, keeps its state, and stops it. */
static void test_start_stop(void)
{
    struct gust_host host;
    struct gust_err err;
    starts = stops = 0;
    int rc = prepare(&host, "stamp a { to ev.a; }\nstamp b { to ev.b; every 250ms; }\n", &err);
    CHECK(rc == 0, "%s", err.msg);
    struct gust_units units;
    gust_units_init(&units);
    rc = rc != 0 ? rc : gust_host_start(&host, NULL, &units, NULL, NULL, &err);
    CHECK(rc == 0, "%s", err.msg);
    CHECK(starts == 2 && host.nstarted == 2);
    CHECK(host.nstarted == 2 && ((struct stamp *)host.started[1].state)->every == 250);
    gust_host_stop(&host);
    CHECK(stops == 2 && host.nstarted == 0);
    gust_host_release(&host);
    CHECK(stops == 2, "stopped once: %d", stops);
}

/* --help (and so the man page) lists its block and keys. */
static void test_help(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    gust_help_keys(out, GUST_HELP_TEXT);
    fclose(out);
    const char *at = strstr(text, "stamp NAME { }");
    CHECK(at != NULL);
    CHECK(at != NULL && strstr(at, "every") != NULL && strstr(at, "how often") != NULL);
    CHECK(strstr(text, "relay NAME { }") != NULL && strstr(text, "flow NAME { }") != NULL);
    free(text);
}

/* The digest counts the file a file key names by its contents: a reload keeps a unit
 * whose files are unchanged, and sees one that changed. */
static void test_digest(void)
{
    char conf[256];
    snprintf(conf, sizeof(conf), "stamp a { to ev.a; file %s/stamp.txt; }\n", dir);
    char d1[GUST_DIGEST_LEN + 1], d2[GUST_DIGEST_LEN + 1], d3[GUST_DIGEST_LEN + 1];
    struct gust_host host;
    struct gust_err err;
    const char *digests[] = {"one", "one", "two"};
    char *out[] = {d1, d2, d3};
    for (int i = 0; i < 3; i++) {
        write_file("stamp.txt", digests[i]);
        int rc = prepare(&host, conf, &err);
        CHECK(rc == 0, "%s", err.msg);
        if (rc == 0) {
            gust_unit_digest(&host.config->units[0], out[i]);
        }
        gust_host_release(&host);
    }
    CHECK(strcmp(d1, d2) == 0 && strcmp(d2, d3) != 0, "%s %s %s", d1, d2, d3);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_kinds.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_config();
    test_start_stop();
    test_help();
    test_digest();
    unlink(write_file("host.conf", ""));
    unlink(write_file("stamp.txt", ""));
    rmdir(dir);
    gust_secrets_shutdown(); /* a generation's start set the store up */
    return check_result("test_kinds");
}
