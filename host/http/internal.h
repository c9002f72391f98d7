/* What the route handlers of the h2o front share. */
#ifndef GUST_HTTP_INTERNAL_H
#define GUST_HTTP_INTERNAL_H

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <pthread.h>
#include <stdatomic.h>
#include <yajl/yajl_tree.h>

#include "../common/buf.h"
#include "../common/tally.h"
#include "gust/api.h"
#include "auth.h"
#include "ingest_subject.h"
#include "dlq_query.h"
#include "metrics.h"
#include "origin.h"
#include "proxy.h"
#include "server.h"

/* A request handed to the admin worker: its blocking JetStream calls run there, and the
 * answer comes back to the loop as a multithread message. The client may go away
 * meanwhile: the request and the job are linked through an anchor in the request's
 * pool (as in ingest.c), and whichever side finishes first unlinks the other. */
struct gust_admin_job {
    h2o_multithread_message_t msg; /* first: messages are cast back to the job */
    struct gust_admin_job *next;   /* the worker's queue */
    struct gust_http *http;
    struct gust_admin_job **anchor; /* NULL once the request is gone */
    h2o_req_t *req;
    enum gust_route route;
    void (*run)(struct gust_admin_job *job); /* on the worker thread */
    struct gust_dlq_query q;
    void *arg;                   /* what else run needs (POST /replay's request), or NULL */
    void (*free_arg)(void *arg); /* frees it once the job is done */
    int status;           /* filled by run */
    struct gust_buf body; /* filled by run: the JSON answer */
    /* On the loop once the job is done (or refused), instead of sending body as the
     * answer; called only while the request is still there. NULL: the route's answer. */
    void (*done)(struct gust_admin_job *job);
    void *done_ud;
};

struct gust_admin_worker {
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct gust_admin_job *head, *tail;
    size_t queued;
    int stopping;
};

struct gust_http_policy {
    struct gust_http_settings s; /* strings not kept: NULL here */
    struct gust_auth admin_auth;
    struct gust_auth admin_read_auth; /* the read-only admin token; disabled when none */
    struct gust_auth ingest_auth;
    struct gust_proxies proxies;
    struct gust_admin_names names; /* the listener's names, server_names: admin_gate.c */
    struct gust_webhooks *webhooks; /* webhooks.h; NULL when none */
};

struct gust_topology;

struct gust_http {
    h2o_globalconf_t config;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    h2o_socket_t *listener;
    int port;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t control;    /* stop requests from the signal thread */
    h2o_multithread_receiver_t admin_done; /* admin jobs finished on the worker */
    h2o_timeout_t linger_timeout;          /* linger.c */
    atomic_int stop_requested;
    int stopping;
    struct gust_bus *bus;
    struct gust_ingest_link *ingest_bus; /* ingest's own connection, on this loop */
    struct gust_calls *calls;            /* call.c: the calls waiting for their reply */
    char base_path[256]; /* without a trailing slash; "" at the root */
    size_t base_len;
    _Atomic(struct gust_http_policy *) policy; /* swapped by a reload, read on the loop */
    h2o_multithread_receiver_t retired;        /* frees replaced policies on the loop */
    size_t ingest_inflight;
    size_t admin_inflight;
    size_t connections; /* open client connections, lingering ones included */
    struct gust_units *units;
    struct gust_leases *leases; /* NULL: none */
    struct gust_nodes *nodes;   /* NULL without `cluster on;` */
    void (*request_reload)(void *ud);
    void *reload_ud;
    int (*check_reload)(void *ud, int force, char *why, size_t size);
    struct gust_admin_worker worker;
    char subject_prefix[128]; /* "ev." */
    char config_path[4096];   /* host.conf, for POST /replay ("" when not known) */
    char dlq_stream[128];
    char dlq_filter[256]; /* "dlq.>" */
    char dlq_prefix[256]; /* "dlq.": a unit's dead letters are on <prefix><unit> */
    /* The console (topology_route.c): the subjects ingest and the webhooks stored to,
     * and the sampler of GET /topology, run every GUST_TOPO_INTERVAL_MS on the loop. */
    struct gust_tally ingested, webhooked;
    struct gust_topology *topology;
    h2o_timeout_t topology_timeout;
    h2o_timeout_entry_t topology_tick;
};

/* The policy in force; on the loop thread, valid until the callback returns. */
static inline const struct gust_http_policy *gust_http_policy(struct gust_http *http)
{
    return atomic_load(&http->policy);
}

/* Sends body (copied) as the response, counting it for /metrics. */
void gust_http_send(h2o_req_t *req, enum gust_route route, int status, const char *content_type,
                    const char *body, size_t len);
/* Sends {"error": message}. */
void gust_http_send_error(h2o_req_t *req, enum gust_route route, int status, const char *message);
/* The value of query parameter name, %-decoded into out; 1 when present. */
int gust_http_query(h2o_req_t *req, const char *name, char *out, size_t size);

/* admin_gate.c: what an admin route asks of a request. READ: a GET or HEAD that shows
 * state, open without a token on a loopback listener; WRITE: everything else (a route
 * that changes state or runs code, and any route not marked READ), which needs the
 * token. */
enum gust_admin_access { GUST_ADMIN_READ, GUST_ADMIN_WRITE };
/* 1 when the request may go on; otherwise answers it (403 or 401, JSON) and logs who it
 * was. */
int gust_admin_gate(struct gust_http *http, h2o_req_t *req, enum gust_route route, enum gust_admin_access access);
/* 1 when the request carries the admin token itself (not the read-only one): what a
 * write needs. After gust_admin_gate passed it. */
int gust_admin_writer(struct gust_http *http, h2o_req_t *req);
/* The console page at /: static, it holds no data (what it shows it fetches from the
 * admin routes with the token typed into its login form), so only step 1 applies. */
int gust_admin_page_gate(struct gust_http *http, h2o_req_t *req, enum gust_route route);
/* 1 when auth is disabled or the request carries its bearer token; otherwise answers
 * 401 with a challenge for realm. */
int gust_http_authorized(struct gust_http *http, h2o_req_t *req, const struct gust_auth *auth,
                         enum gust_route route, const char *realm);

/* server.c: a client connection is gone (h2o's on_close of its socket; data is the http). */
void gust_http_on_conn_close(void *data);

/* h2o_errors.c: what h2o would answer itself, answered in JSON. The filter goes on each
 * path configuration (the fallback one too); bad_request tells a request h2o could not
 * parse (1, with the status and why) from a real one (0). */
void gust_h2o_errors_register(struct gust_http *http, h2o_pathconf_t *pathconf);
int gust_h2o_bad_request(h2o_req_t *req, int *status, char *why, size_t size);

/* topology_route.c: GET /topology (the console's data) and its sampler on the loop. */
void gust_topology_init(struct gust_http *http);
void gust_topology_stop(struct gust_http *http);
void gust_topology_handle(struct gust_http *http, h2o_req_t *req);
/* Its answer (with the sparklines when spark) into out; returns the HTTP status. */
int gust_topology_json(struct gust_http *http, int spark, struct gust_buf *out);

/* linger.c: once the answer to req is out and h2o closes the connection, read and drop
 * what the client still sends for a while before closing (see there why). */
void gust_linger_init(struct gust_http *http);
void gust_linger_arm(struct gust_http *http, h2o_req_t *req);

#define GUST_INGEST_MSG_ID_MAX 200

/* ingest.c: the one way a request is published. Publishes m (its strings borrowed for
 * the call) on ingest's connection and answers req 202 once JetStream stored it (or
 * 503), counting the answer under route. */
void gust_ingest_publish(struct gust_http *http, h2o_req_t *req, enum gust_route route, const struct gust_pub_msg *m);
typedef void (*gust_ingest_publish_fn)(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                                       const struct gust_pub_msg *m);
/* POST <base>/ingest/<suffix> (publish: gust_ingest_publish) and /call/<suffix>
 * (gust_call_publish); suffix is what follows the route's name. The same checks for
 * both (method, subject, body, message id; a 4xx counted under route), then the body
 * published to ev.<suffix> by publish. */
void gust_ingest_route(struct gust_http *http, h2o_req_t *req, enum gust_route route, h2o_iovec_t suffix,
                       gust_ingest_publish_fn publish);
/* Answers a publish that failed: status is the done callback's (ingest_link.h), rc
 * what gust_ingest_link_publish returned when it sent nothing. */
void gust_ingest_answer_failed(h2o_req_t *req, enum gust_route route, int status, const char *error);
void gust_ingest_answer_unsent(h2o_req_t *req, enum gust_route route, int rc);

/* call.c: the one way a call is published (POST <base>/call/<suffix>, a webhook with
 * `respond flow`): m (borrowed for the call) with the reply header added; answers req
 * with the reply of the flow that handles it (bus reply.h), 504 after call_timeout, or
 * ingest's errors. */
void gust_call_publish(struct gust_http *http, h2o_req_t *req, enum gust_route route, const struct gust_pub_msg *m);
/* On the loop, after the ingest link is made: replies reach the calls from now on. */
int gust_calls_create(struct gust_http *http, int64_t timeout_ms);
/* A reload's call_timeout, for the calls that start from now on (and those waiting). */
void gust_calls_set_timeout(struct gust_http *http, int64_t timeout_ms);
/* Calls that wait for a reply. */
size_t gust_calls_waiting(const struct gust_http *http);
/* Answers every call still waiting (503) and frees what is left; at shutdown, after
 * the ingest link is gone. */
void gust_calls_close(struct gust_http *http);

/* The message id a request carries in the first of names (lowercase header names) it
 * has, quotes removed, into out; "" when none. 0, or -1 when unusable: repeated, empty,
 * over 200 characters or not visible ASCII, or two names saying different things. */
int gust_ingest_msg_id(h2o_req_t *req, const char *const *names, size_t nnames, char out[GUST_INGEST_MSG_ID_MAX + 1]);

/* webhook.c: POST <base><path> of webhook h (the policy's, valid for the call). */
struct gust_webhook;
void gust_webhook_handle(struct gust_http *http, h2o_req_t *req, const struct gust_webhook *h);

/* admin.c: the worker thread for blocking admin calls. */
int gust_admin_start(struct gust_http *http, struct gust_err *err);
/* Queues run for req (answers 503 itself when the queue is full). */
void gust_admin_submit(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                       void (*run)(struct gust_admin_job *), const struct gust_dlq_query *q);
/* The same with an argument of the caller's (owned from here on: freed with free_arg
 * when the job is done or refused). */
void gust_admin_submit_arg(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                           void (*run)(struct gust_admin_job *), void *arg, void (*free_arg)(void *));
/* The same, but the answer goes to done(job) on the loop (MCP's tools/call: mcp.c),
 * refusals (503) included; done_ud is the caller's. */
void gust_admin_submit_done(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                            void (*run)(struct gust_admin_job *), const struct gust_dlq_query *q, void *arg,
                            void (*free_arg)(void *), void (*done)(struct gust_admin_job *), void *done_ud);
/* On the worker: the job's answer is {"error": why} with status. */
void gust_admin_fail(struct gust_admin_job *job, int status, const char *why);
/* Waits for the job running now, answers what is still queued with 503. */
void gust_admin_stop(struct gust_http *http);
void gust_admin_on_done(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages);

/* dlq_routes.c: GET /dlq, POST /dlq/replay, POST /dlq/purge. rest is what follows "/dlq". */
void gust_dlq_handle(struct gust_http *http, h2o_req_t *req, h2o_iovec_t rest);
/* What a dead-letter request asks, from its query string and JSON body as
 * gust_dlq_query_parse reads them: q and the worker's run, or why not (a literal). */
enum gust_dlq_op { GUST_DLQ_LIST, GUST_DLQ_REPLAY, GUST_DLQ_PURGE };
const char *gust_dlq_prepare(enum gust_dlq_op op, const char *query, size_t qlen, const char *body, size_t blen,
                             struct gust_dlq_query *q, void (**run)(struct gust_admin_job *));

/* events.c: GET /events[?unit=NAME]. */
void gust_events_handle(struct gust_http *http, h2o_req_t *req);
/* Its answer for unit ("" for every unit) into out; returns the HTTP status. */
int gust_events_json(struct gust_http *http, const char *unit, struct gust_buf *out);

/* replay_route.c: POST /replay. */
void gust_replay_handle(struct gust_http *http, h2o_req_t *req);
/* The replay a JSON object asks for, as an argument for gust_replay_route_run (freed with
 * gust_replay_free), or why not (a literal: the answer is 400). */
const char *gust_replay_prepare(yajl_val body, void **arg);
void gust_replay_route_run(struct gust_admin_job *job);
void gust_replay_free(void *arg);

/* server.c: GET /units's answer into out. */
void gust_units_json(struct gust_http *http, struct gust_buf *out);
/* The "cluster" member's value of /units and /topology: the leases and the node
 * directory, or null when the process has no leases. */
void gust_http_render_cluster(const struct gust_http *http, struct gust_buf *out);
/* server.c: POST /reload's job (job->q.force: without the check). */
void gust_reload_run(struct gust_admin_job *job);

/* mcp.c: POST /mcp, the admin API as MCP tools (JSON-RPC 2.0 over Streamable HTTP). */
void gust_mcp_handle(struct gust_http *http, h2o_req_t *req);

/* status_page.c: GET / */
void gust_status_page_handle(struct gust_http *http, h2o_req_t *req);

#endif
