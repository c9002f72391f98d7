/* gust: the host process, and its command-line tools. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "../bus/bus.h"
#include "../cluster/lease.h"
#include "../cluster/nodes.h"
#include "../common/log.h"
#include "../conf/conf_schema.h"
#include "../core/bus_conf.h"
#include "../core/config.h"
#include "../core/help.h"
#include "../core/host.h"
#include "../core/kind.h"
#include "../core/reload.h"
#include "../secret/secret.h"
#include "../core/rule_test.h"
#include "../core/sd_notify.h"
#include "../core/config_tables.h"
#include "../flow/flow.h"
#include "../http/server.h"
#include "../http/webhooks.h"
#include "../plugin/loader.h"
#include "../trace/trace.h"
#include "../vpl/vpl_cli.h"
#include "replay_cli.h"
#include "gust/version.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gust [-c FILE] [-t]          run (or with -t: check) the host\n"
            "       gust vpl-check FILE          check a VPL program\n"
            "       gust vpl-run PROGRAM EVENTS  run a VPL program over JSON lines, alerts on stdout\n"
            "       gust vpl-test PROGRAM CASE...\n"
            "                                    run rule tests: exit 0 when every case gives its alerts\n"
            "       gust test-flow [-c FILE] [--lua-path DIR] SCRIPT CASE.json...\n"
            "                                    golden tests of a Lua flow (with -c: the modules\n"
            "                                    and tables of that host.conf)\n"
            "       gust replay [-c FILE] --unit NAME --script NEW.lua [--last N | --since TIME |\n"
            "                   --from-seq S] [--diff FILE]\n"
            "                                    run a flow's script and NEW.lua over its stored\n"
            "                                    events; exit 1 when an input differs\n"
            "\n"
            "options:\n"
            "  -c, --config FILE  host.conf to use (default: host.conf)\n"
            "  -t, --test         check the configuration, every script and rule it names, and exit\n"
            "  -h, --help         this text, and every host.conf key\n"
            "      --help-roff    every host.conf key as roff (for gust-host.conf(5))\n"
            "  -v, --version      print the version\n"
            "\n"
            "host.conf keys (FLAGS: reloadable = a reload applies a new value; a reload that changes a key\n"
            "of the top level, http or nats without it is refused):\n");
    gust_help_keys(out, GUST_HELP_TEXT);
}

/* What the signal thread acts on. It runs from the start on, before the bus answers:
 * a stop asked for then gives the start up (main sees `stop`); once the front runs,
 * it stops the front. */
struct signal_ctx {
    sigset_t set;
    pthread_mutex_t lock;
    struct gust_http *http;         /* set when the front runs */
    struct gust_reloader *reloader; /* set when the units run */
    atomic_int stop;
};

#define TRIM_INTERVAL_S 10
/* glibc gives threads up to 8 malloc arenas per core (16 here), and each unit's thread
 * lands in one. After a burst that every unit takes at once (a backlog fetched by 50
 * flows), each arena keeps its pages pinned by a few live blocks among the freed ones,
 * which malloc_trim cannot hand back: 50 flows settled at 27-27.4 MB with 16 arenas
 * (about 0.45 MB of free but resident memory each), 24.0 with 2 (multi-flow.sh 2000,
 * 2026-12-06). MALLOC_ARENA_MAX in the environment still decides. */
#define ARENAS_MAX 2

static void limit_arenas(void)
{
    if (getenv("MALLOC_ARENA_MAX") == NULL) {
        mallopt(M_ARENA_MAX, ARENAS_MAX);
    }
}

/* Signals are blocked in every thread and taken here, synchronously, so their
 * handling may lock and log. Between signals this thread also hands freed heap pages
 * back to the kernel every TRIM_INTERVAL_S: a burst (a backlog fetched by many units at
 * once) otherwise leaves the process's RSS at its peak, in free but fragmented memory. */
static void *signal_thread(void *arg)
{
    struct signal_ctx *s = arg;
    const struct timespec interval = {TRIM_INTERVAL_S, 0};
    for (;;) {
        int sig = sigtimedwait(&s->set, NULL, &interval);
        if (sig < 0) {
            if (errno == EAGAIN) {
                malloc_trim(0);
            }
            continue;
        }
        pthread_mutex_lock(&s->lock);
        if (sig == SIGHUP) {
            if (s->reloader != NULL) {
                gust_info("SIGHUP: reloading");
                gust_sd_notify_reloading();
                gust_reloader_request(s->reloader);
            } else {
                gust_info("SIGHUP while starting: the configuration read at the start is the one loading");
            }
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        gust_info("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        atomic_store(&s->stop, 1);
        if (s->http != NULL) {
            gust_http_request_stop(s->http);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
}

/* The keys of the listener and of the NATS connections, which their layers read and
 * check themselves (files exist, keys match certificates, one way to authenticate). */
static int check_connections(const struct gust_config *c, struct gust_nats_link_conf *link,
                             struct gust_listen_conf *listen, struct gust_err *err)
{
    int rc = gust_nats_link_conf_load(c->nats_cfg, link, err);
    return rc != 0 ? rc : gust_listen_conf_load(c->http_cfg, listen, err);
}

/* Kept reachable until exit: h2o's loop is never torn down (see gust_http_close). */
static struct gust_http *http_server;
static struct gust_units units;
static struct gust_reloader reloader;

/* Waits ms, or less when a stop is asked for. */
static void wait_unless_stopped(const atomic_int *stop, int64_t ms)
{
    for (int64_t waited = 0; waited < ms && !atomic_load(stop); waited += 50) {
        usleep(50 * 1000);
    }
}

/* Connects the bus and what runs on it (leases, the node directory). A server that is
 * down, silent or misbehaving (a handshake it garbles) is tried again with backoff,
 * for as long as it takes; only what another try cannot cure gives up: credentials,
 * TLS or a configuration the server refuses (GUST_ECONFIG), or a stop asked for
 * (GUST_EAGAIN). */
static int start_bus(const struct gust_config *c, struct gust_bus_conf *bc, const atomic_int *stop,
                     struct gust_bus **bus, struct gust_leases **leases, struct gust_nodes **nodes,
                     struct gust_err *err)
{
    const struct gust_nats_keys *nk = &c->nats;
    bc->cancel = stop;
    int64_t delay = 250;
    for (int attempt = 1;; attempt++) {
        int rc = bc->nurls > 0 ? gust_nats_probe(bc->urls, bc->nurls, &bc->link, err) : 0;
        rc = rc != 0 ? rc : gust_bus_create(bc, bus, err);
        if (rc == 0) {
            struct gust_lease_conf lc = {
                .bucket = nk->lease_bucket,
                .ttl_ms = nk->lease_ttl,
                .poll_ms = nk->lease_poll,
                .replicas = (int)nk->replicas,
                .holder = c->top.node_name,
            };
            rc = gust_leases_create(&lc, *bus, leases, err);
            if (rc == 0 && c->top.cluster) {
                struct gust_nodes_conf nc = {
                    .bucket = lc.bucket, .ttl_ms = lc.ttl_ms, .replicas = lc.replicas, .self = gust_leases_self(*leases)};
                rc = gust_nodes_create(&nc, *bus, nodes, err);
            }
            if (rc != 0) {
                gust_leases_destroy(*leases);
                *leases = NULL;
                gust_bus_destroy(*bus);
                *bus = NULL;
            }
        }
        if (rc == 0) {
            return 0;
        }
        if (atomic_load(stop)) {
            return gust_err_set(err, GUST_EAGAIN, "stopped while starting");
        }
        if (rc == GUST_ECONFIG || rc == GUST_ENOMEM) {
            return rc;
        }
        gust_warn("%s; trying again in %.2f s (attempt %d)", err->msg, delay / 1e3, attempt + 1);
        wait_unless_stopped(stop, delay);
        if (atomic_load(stop)) {
            return gust_err_set(err, GUST_EAGAIN, "stopped while starting");
        }
        delay = delay * 2 < 5000 ? delay * 2 : 5000;
    }
}

/* The front's settings from a checked config: borrowed strings, valid while it lives. */
static struct gust_http_settings http_settings(const struct gust_config *c)
{
    const struct gust_http_keys *h = &c->http;
    return (struct gust_http_settings){
        .max_body = (size_t)h->max_body,
        .max_depth = (size_t)h->max_depth,
        .admin_token_file = h->admin_token_file,
        .admin_token_env = h->admin_token_env,
        .admin_read_token_file = h->admin_read_token_file,
        .admin_read_token_env = h->admin_read_token_env,
        .ingest_token_file = h->ingest_token_file,
        .ingest_token_env = h->ingest_token_env,
        .metrics_public = h->metrics_public,
        .trusted_proxies = h->trusted_proxies.items,
        .ntrusted_proxies = h->trusted_proxies.n,
        .client_timeout_ms = h->client_timeout,
        .max_connections = (size_t)h->max_connections,
        .max_header = (size_t)h->max_header_size,
        .drain_ms = h->drain_timeout,
        .call_timeout_ms = h->call_timeout,
        .listen = gust_cfg_item(c->http_cfg, "listen", 0),
        .listen_ssl = gust_cfg_count(c->http_cfg, "listen") == 2,
        .server_names = h->server_names.items,
        .nserver_names = h->server_names.n,
        .webhooks = c->webhooks,
        .nwebhooks = c->nwebhooks,
    };
}

/* The reloader's hooks: what the process applies itself from a new generation. */
static int apply_prepare(void *ud, const struct gust_config *next, void **pending, struct gust_err *err)
{
    (void)ud;
    struct gust_http_settings hs = http_settings(next);
    return gust_http_policy_create(&hs, (struct gust_http_policy **)pending, err);
}

static void apply_commit(void *ud, const struct gust_config *next, void *pending)
{
    gust_log_set_level(next->log_level);
    gust_log_set_json(next->log_json);
    gust_http_set_policy(ud, pending);
}

static void apply_discard(void *ud, void *pending)
{
    (void)ud;
    gust_http_policy_destroy(pending);
}

static int run(const char *config_path)
{
    struct gust_err err = {{0}};
    struct gust_host *host = calloc(1, sizeof(*host));
    int rc = host != NULL ? gust_host_prepare(host, config_path, &err) : gust_err_set(&err, GUST_ENOMEM, "out of memory");
    if (rc != 0) {
        gust_error("%s", err.msg);
        if (host != NULL) {
            gust_host_release(host);
        }
        free(host);
        gust_plugins_shutdown();
        return 1;
    }
    gust_units_init(&units);
    /* The process-wide blocks come from the first generation; a reload may change only
     * their reloadable keys (reload.c), which apply_commit puts in force. */
    const struct gust_config *c = host->config;
    gust_log_set_level(c->log_level);
    gust_log_set_json(c->log_json);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread starts: they inherit it */
    limit_arenas();
    signal(SIGPIPE, SIG_IGN);
    /* After the mask: the exporter's thread must not take SIGTERM either. */
    struct gust_trace_conf tc = {
        .endpoint = c->otlp.endpoint, .sample = c->otlp.sample, .service_name = c->otlp.service_name};
    if (gust_trace_start(&tc, &err) != 0) {
        gust_error("%s", err.msg);
        gust_host_release(host);
        free(host);
        gust_plugins_shutdown();
        return 1;
    }

    /* Signals are taken from here on: a SIGTERM while the bus does not answer yet
     * gives the start up at once. */
    static struct signal_ctx sc;
    sc.set = set;
    pthread_mutex_init(&sc.lock, NULL);
    pthread_t sig_tid;
    pthread_create(&sig_tid, NULL, signal_thread, &sc);

    const struct gust_nats_keys *nk = &c->nats;
    struct gust_bus_conf bc = gust_config_bus_conf(c);
    struct gust_bus *bus = NULL;
    struct gust_leases *leases = NULL;
    struct gust_nodes *nodes = NULL;
    struct gust_listen_conf listen;
    rc = check_connections(c, &bc.link, &listen, &err);
    if (rc == 0) {
        rc = start_bus(c, &bc, &sc.stop, &bus, &leases, &nodes, &err);
    }
    if (rc == 0) {
        struct gust_http_conf hc = {
            .listen = listen,
            .base_path = c->http.base_path,
            .units = &units,
            .leases = leases,
            .nodes = nodes,
            .request_reload = gust_reloader_request,
            .reload_ud = &reloader,
            .check_reload = gust_reloader_check,
            .settings = http_settings(c),
            .config_path = config_path,
            .dlq_stream = nk->dlq_stream,
            .dlq_subjects = nk->dlq_subjects,
            .subject_prefix = c->subject_prefix,
        };
        rc = gust_http_create(&hc, bus, &http_server, &err);
    }
    if (rc == 0) {
        units.bus = bus;
        rc = gust_host_start(host, bus, &units, leases, nodes, &err);
    }
    if (rc == 0) {
        /* Only now are the readers known: until then nothing is removed. */
        gust_bus_set_readers(bus, gust_units_readers, &units);
    }
    if (rc == 0) {
        struct gust_reload_apply apply = {
            .prepare = apply_prepare, .commit = apply_commit, .discard = apply_discard, .ud = http_server};
        rc = gust_reloader_start(&reloader, config_path, bus, &units, host, &apply, &err); /* owns host now */
    }
    /* A stop asked for while starting ends the start here (the front is not serving
     * yet): what was made is undone and the process exits 0. */
    pthread_mutex_lock(&sc.lock);
    int stopped = atomic_load(&sc.stop);
    if (rc == 0 && !stopped) {
        sc.http = http_server;
        sc.reloader = &reloader;
    }
    pthread_mutex_unlock(&sc.lock);
    if (rc != 0 || stopped) {
        if (rc != 0 && !stopped) {
            gust_error("%s", err.msg);
        }
        if (bus != NULL) {
            gust_bus_set_readers(bus, NULL, NULL);
        }
        units.bus = NULL;
        if (rc == 0) {
            gust_reloader_stop(&reloader); /* releases host */
        } else {
            gust_host_release(host);
            free(host);
        }
        gust_leases_destroy(leases);
        gust_nodes_destroy(nodes);
        gust_bus_destroy(bus);
        gust_plugins_shutdown();
        gust_secrets_shutdown();
        gust_trace_stop();
        if (!stopped) {
            return 1; /* the signal thread still waits for a signal: exit ends it */
        }
        pthread_join(sig_tid, NULL);
        gust_info("stopped");
        return 0;
    }

    gust_info("gust %s running with %s", GUST_VERSION, config_path);
    gust_sd_notify("READY=1\nSTATUS=running");

    gust_http_run(http_server);

    /* Stop producing first, then let what is in flight reach the bus. */
    gust_sd_notify("STOPPING=1");
    gust_reloader_stop(&reloader);
    gust_leases_destroy(leases); /* gives the leases back: a peer takes over at once */
    gust_nodes_destroy(nodes);
    gust_bus_drain(bus, 300);
    gust_bus_set_readers(bus, NULL, NULL);
    units.bus = NULL;
    gust_bus_destroy(bus);
    gust_http_close(http_server);
    pthread_join(sig_tid, NULL);
    gust_plugins_shutdown(); /* every instance is gone: fini, dlclose */
    gust_secrets_shutdown(); /* nothing renders any more: the values zeroed */
    gust_bus_library_close();
    gust_trace_stop(); /* the last spans, sent within a short bound */
    gust_info("stopped");
    return 0;
}

/* gust -t: what each unit's kind tests beyond its check (a detect block's `tests DIR;`
 * run against its rules, the cases' results on stderr). */
static int run_kind_tests(const struct gust_config *c, struct gust_err *err)
{
    for (size_t i = 0; i < c->nunits; i++) {
        const struct gust_unit_conf *u = &c->units[i];
        int rc = u->kind->test != NULL ? u->kind->test(u, err) : 0;
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int test_config(const char *config_path)
{
    struct gust_err err = {{0}};
    struct gust_host host = {0};
    int rc = gust_host_prepare(&host, config_path, &err);
    struct gust_nats_link_conf link;
    struct gust_listen_conf listen;
    rc = rc != 0 ? rc : check_connections(host.config, &link, &listen, &err);
    rc = rc != 0 ? rc : run_kind_tests(host.config, &err);
    struct gust_webhooks *hooks = NULL; /* their secrets readable */
    rc = rc != 0 ? rc : gust_webhooks_create(host.config->webhooks, host.config->nwebhooks, &hooks, &err);
    gust_webhooks_destroy(hooks);
    gust_host_release(&host);
    gust_plugins_shutdown();
    if (rc != 0) {
        fprintf(stderr, "gust: %s\ngust: configuration file %s test failed\n", err.msg, config_path);
        return 1;
    }
    fprintf(stderr, "gust: configuration file %s test is successful\n", config_path);
    return 0;
}

static int load_config_tables(void *ud, struct gust_tables *t, struct gust_err *err)
{
    return gust_config_tables_load(ud, t, err);
}

/* The lua_path a running unit of SCRIPT would have: that of the flow block naming the
 * same file, else the top level's. */
static const char *lua_path_for(const struct gust_config *c, const char *script)
{
    char want[PATH_MAX], got[PATH_MAX];
    if (realpath(script, want) != NULL) {
        for (size_t i = 0; i < c->nunits; i++) {
            const struct gust_unit_conf *u = &c->units[i];
            if ((u->kind->flags & GUST_KIND_LUA) != 0 && realpath(u->k.script, got) != NULL &&
                strcmp(want, got) == 0) {
                return gust_config_lua_path(c, u);
            }
        }
    }
    return gust_config_lua_path(c, NULL);
}

/* gust test-flow [-c FILE] [--lua-path DIR] SCRIPT CASE.json... */
static int test_flow(int argc, char **argv)
{
    struct gust_flow_test_opts opts = {0};
    const char *config_path = NULL;
    int i = 1;
    while (i + 1 < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            config_path = argv[i + 1];
        } else if (strcmp(argv[i], "--lua-path") == 0) {
            opts.lua_path = argv[i + 1];
        } else {
            break;
        }
        i += 2;
    }
    if (argc - i < 2 || argv[i][0] == '-') {
        fprintf(stderr, "usage: gust test-flow [-c host.conf] [--lua-path DIR] SCRIPT CASE.json...\n");
        return 2;
    }
    struct gust_config *config = NULL;
    if (config_path != NULL) {
        struct gust_err err = {{0}};
        if (gust_config_load(config_path, &config, &err) != 0) {
            fprintf(stderr, "gust: %s\n", err.msg);
            return 2;
        }
        if (opts.lua_path == NULL) {
            opts.lua_path = lua_path_for(config, argv[i]);
        }
        opts.load_tables = load_config_tables;
        opts.ud = config;
    }
    int rc = gust_flow_test_run(&opts, argv[i], argv + i + 1, argc - i - 1);
    gust_config_destroy(config);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "vpl-check") == 0 || strcmp(argv[1], "vpl-run") == 0)) {
        return gust_vpl_cli_main(argc - 1, argv + 1);
    }
    if (argc >= 2 && strcmp(argv[1], "vpl-test") == 0) {
        return gust_rule_test_main(argc - 1, argv + 1);
    }
    if (argc >= 2 && strcmp(argv[1], "test-flow") == 0) {
        return test_flow(argc - 1, argv + 1);
    }
    if (argc >= 2 && strcmp(argv[1], "replay") == 0) {
        return gust_replay_main(argc - 1, argv + 1);
    }
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"test", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'v'},
        {"help-roff", no_argument, NULL, 'R'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = "host.conf";
    int test = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:thv", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 't':
            test = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'R':
            gust_help_keys(stdout, GUST_HELP_ROFF);
            return 0;
        case 'v':
            printf("gust %s (plugin ABI %d.%d)\n", GUST_VERSION, GUST_ABI_MAJOR, GUST_ABI_MINOR);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gust: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return test ? test_config(config_path) : run(config_path);
}
