/* What the route handlers of the h2o front share. */
#ifndef GUST_HTTP_INTERNAL_H
#define GUST_HTTP_INTERNAL_H

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <stdatomic.h>

#include "metrics.h"
#include "server.h"

struct gust_http {
    h2o_globalconf_t config;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    h2o_socket_t *listener;
    int port;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t acks;    /* ingest publishes completed on bus threads */
    h2o_multithread_receiver_t control; /* stop requests from the signal thread */
    atomic_int stop_requested;
    int stopping;
    struct gust_bus *bus;
    char base_path[256]; /* without a trailing slash; "" at the root */
    size_t base_len;
    size_t max_body;
    size_t ingest_inflight;
    struct gust_units *units;
};

/* Sends body (copied) as the response, counting it for /metrics. */
void gust_http_send(h2o_req_t *req, enum gust_route route, int status, const char *content_type,
                    const char *body, size_t len);
/* Sends {"error": message}. */
void gust_http_send_error(h2o_req_t *req, enum gust_route route, int status, const char *message);

/* POST <base>/ingest/<suffix>; suffix is what follows "/ingest/". */
void gust_ingest_handle(struct gust_http *http, h2o_req_t *req, h2o_iovec_t suffix);
void gust_ingest_on_acks(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages);

#endif
