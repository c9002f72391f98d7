#include "replay_cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bus/bus.h"
#include "../bus/link_conf.h"
#include "../common/buf.h"
#include "../common/log.h"
#include "../core/bus_conf.h"
#include "../core/config.h"
#include "../core/config_tables.h"
#include "../core/replay.h"

#define SHOWN 5               /* differences printed */
#define CONNECT_WAIT_MS 5000

static const char usage_text[] =
    "usage: gust replay [-c host.conf] --unit NAME --script NEW.lua\n"
    "                   [--last N | --since TIME | --from-seq S] [--diff FILE]\n"
    "  runs the unit's current script and NEW.lua over stored events of its source\n"
    "  (default: the last 1000); nothing is published, no state is written.\n"
    "  TIME: RFC 3339 (2026-11-29T23:00:00Z) or a duration before now (10m, 2h).\n"
    "  --diff FILE: every differing input as a JSON line. Exit 0: none differs; 1: some\n"
    "  do; 2: the replay could not run.\n";

struct shown {
    FILE *diff;
    struct gust_buf first; /* the first SHOWN differences, as text */
    size_t n;
    int write_failed;
};

static void on_diff(void *ud, const struct gust_replay_diff *d)
{
    struct shown *s = ud;
    if (s->diff != NULL && (fwrite(d->json, 1, d->len, s->diff) != d->len || fputc('\n', s->diff) == EOF)) {
        s->write_failed = 1;
    }
    if (s->n++ < SHOWN) {
        gust_buf_printf(&s->first, "%s", d->text);
    }
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] == '\0' || s[0] == '-' || *end != '\0' || v == 0) {
        return -1;
    }
    *out = v;
    return 0;
}

int gust_replay_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"unit", required_argument, NULL, 'u'},
        {"script", required_argument, NULL, 's'}, {"last", required_argument, NULL, 'l'},
        {"since", required_argument, NULL, 't'},  {"from-seq", required_argument, NULL, 'f'},
        {"diff", required_argument, NULL, 'd'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = "host.conf", *diff_path = NULL;
    struct gust_replay_opts o = {0};
    int ranges = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': config_path = optarg; break;
        case 'u': o.unit = optarg; break;
        case 's': o.candidate_path = optarg; break;
        case 'd': diff_path = optarg; break;
        case 'l':
        case 'f':
            ranges++;
            if (parse_u64(optarg, opt == 'l' ? &o.last : &o.from_seq) != 0) {
                fprintf(stderr, "gust replay: --%s wants a positive number, not '%s'\n",
                        opt == 'l' ? "last" : "from-seq", optarg);
                return 2;
            }
            break;
        case 't':
            ranges++;
            if (gust_replay_parse_since(optarg, &o.since_ms) != 0) {
                fprintf(stderr, "gust replay: --since wants an RFC 3339 time or a duration (10m), not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (o.unit == NULL || o.candidate_path == NULL || ranges > 1 || optind < argc) {
        fputs(ranges > 1 ? "gust replay: give one of --last, --since and --from-seq\n" : usage_text, stderr);
        return 2;
    }
    gust_log_set_level(GUST_LOG_WARN);
    struct gust_err err = {{0}};
    struct gust_config *config = NULL;
    struct gust_tables *tables = NULL;
    struct gust_bus *bus = NULL;
    struct shown shown = {0};
    int status = 2;
    if (gust_config_load(config_path, &config, &err) != 0 || gust_tables_create(&tables, &err) != 0 ||
        gust_config_tables_load(config, tables, &err) != 0) {
        fprintf(stderr, "gust replay: %s\n", err.msg);
        goto done;
    }
    if (config->nats.url.n == 0) {
        fprintf(stderr, "gust replay: %s runs an embedded nats-server (no nats { url }): replay through the "
                        "running gust, POST /replay\n", config_path);
        goto done;
    }
    if (diff_path != NULL && (shown.diff = fopen(diff_path, "w")) == NULL) {
        fprintf(stderr, "gust replay: cannot write %s\n", diff_path);
        goto done;
    }
    /* Connected as the host is (TLS, credentials), and refused the same way. */
    struct gust_bus_conf bc = gust_config_bus_conf(config);
    if (gust_nats_link_conf_load(config->nats_cfg, &bc.link, &err) != 0 ||
        gust_nats_probe(bc.urls, bc.nurls, &bc.link, &err) != 0 || gust_bus_create(&bc, &bus, &err) != 0) {
        fprintf(stderr, "gust replay: %s\n", err.msg);
        goto done;
    }
    for (int waited = 0; !gust_bus_connected(bus) && waited < CONNECT_WAIT_MS; waited += 10) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    o.config = config;
    o.tables = tables;
    o.bus = bus;
    o.on_diff = on_diff;
    o.ud = &shown;
    struct gust_replay_summary s;
    if (gust_replay_run(&o, &s, &err) != 0) {
        fprintf(stderr, "gust replay: %s\n", err.msg);
        goto done;
    }
    printf("replay of flow '%s' over %s", s.unit, s.source);
    if (s.inputs > 0) {
        printf(", stream sequences %" PRIu64 " to %" PRIu64, s.first_seq, s.last_seq);
    }
    printf("\ninputs %" PRIu64 ": %" PRIu64 " identical, %" PRIu64 " differing; errors: current %" PRIu64
           ", candidate %" PRIu64 "\n",
           s.inputs, s.identical, s.differing, s.errors_current, s.errors_candidate);
    if (shown.n > 0) {
        printf("first differences:\n%.*s", (int)shown.first.len, shown.first.data);
        if (shown.n > SHOWN) {
            printf("... and %zu more%s\n", shown.n - SHOWN, diff_path != NULL ? " (all in the --diff file)" : "");
        }
    }
    struct gust_buf json = {0};
    gust_replay_summary_json(&s, &json);
    printf("summary: %.*s\n", (int)json.len, json.data);
    gust_buf_free(&json);
    status = s.differing > 0 ? 1 : 0;
done:
    if (shown.diff != NULL && (fclose(shown.diff) != 0 || shown.write_failed)) {
        fprintf(stderr, "gust replay: writing %s failed\n", diff_path);
        status = 2;
    }
    gust_buf_free(&shown.first);
    gust_bus_destroy(bus);
    gust_tables_unref(tables);
    gust_config_destroy(config);
    if (bus != NULL) {
        gust_bus_library_close();
    }
    return status;
}
