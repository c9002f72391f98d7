/* http_out internals shared by its files: the checked settings of an instance and the
 * client that delivers a batch with them. Nothing here is exported from the .so. */
#ifndef GUST_HTTP_OUT_H
#define GUST_HTTP_OUT_H

#include <stddef.h>

#include "gust/plugin.h"

struct curl_slist;

struct http_out_conf {
    const char *url;            /* borrowed from the cfg, which outlives the instance */
    int put;                    /* PUT instead of POST */
    struct curl_slist *headers; /* owned: Content-Type, the user's headers, "Expect:" */
    long timeout_ms;            /* whole request, connecting included */
    size_t max_inflight;        /* requests handed to libcurl at once */
    long connections;           /* most connections open at once, all kept alive */
};

/* Fills conf from cfg (borrowed), naming file:line of a bad value in err. */
int http_out_conf_load(struct http_out_conf *conf, const struct gust_host_api *api,
                       const struct gust_cfg *cfg, struct gust_err *err);
void http_out_conf_free(struct http_out_conf *conf);

struct http_out_client;

/* conf is borrowed and must outlive the client. Opens no connection yet. */
int http_out_client_create(struct http_out_client **out, const struct http_out_conf *conf,
                           struct gust_err *err);
/* Sends every msgs[i] and fills results[i] (see gust_plugin_type.deliver). Returns 0, or
 * negative with err filled when libcurl itself failed and the batch is to be retried. */
int http_out_client_deliver(struct http_out_client *cl, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results, struct gust_err *err);
/* Closes the connections. NULL is a no-op. */
void http_out_client_destroy(struct http_out_client *cl);


#endif
