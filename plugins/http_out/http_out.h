/* http_out internals shared by its files: the checked settings of an instance, the URL
 * and response readers, and the client that delivers a batch with them. Nothing here is
 * exported from the .so. */
#ifndef GUST_HTTP_OUT_H
#define GUST_HTTP_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gust/sdk.h"
#include "gust/plugin.h"

/* How much of a refusing server's answer goes into the dead-letter error text. */
#define HTTP_OUT_BODY_KEEP 120
/* Longest response head (status line and headers) read before the answer is malformed. */
#define HTTP_OUT_HEAD_MAX 16384
#define HTTP_OUT_HEAD_MAX_TEXT "16384"
/* Longest answer body reply_to publishes (as it is, or base64 in {"body_base64": ...}):
 * what fits NATS's default max_payload (1 MiB) with room for the headers. */
#define HTTP_OUT_REPLY_MAX (1024 * 1024 - 4096)

/* The parts of the url key (http_out_url.c). Pointers are into the url string. */
struct http_out_url {
    int tls;                /* https */
    char host[256];         /* without the brackets of an IPv6 literal */
    int port;               /* 80 or 443 when the URL names none */
    const char *authority;  /* host[:port] as written: the Host header */
    size_t authority_len;
    const char *target;     /* path and query; may be empty or start with '?' */
    size_t target_len;
};

/* Fills u from url (borrowed, and u points into it). Returns 0, or -1 when it is not an
 * absolute http:// or https:// URL with a host. */
int http_out_url_parse(struct http_out_url *u, const char *url);

/* The keys as written, bound by http_out_schema (strings borrowed from the cfg, which
 * outlives the instance). */
struct http_out_keys {
    const char *url;
    const char *method;
    struct gust_list header;
    const char *content_type;
    int64_t timeout;
    int64_t max_inflight;
    int64_t connections;
    int64_t pipeline;
    const char *tls_ca;
    int64_t retry_max_delay;
    int64_t batch_max;
    int64_t batch_bytes;
    int64_t batch_linger;
    const char *batch_format;
    const char *batch_wrap;
    double rate; /* per second; 0: none */
    int64_t rate_burst;
    const char *rate_key;
    const char *reply_to;
    struct gust_list forward_headers;
    const char *sign;
    const char *secret_file;
    const char *secret;
    const char *sign_header;
    const char *sign_encoding;
    const char *sign_prefix;
    int ordered;
    const char *ordered_by;
};

extern const struct gust_schema_key http_out_schema[];

/* No message: the end of a group's list (the client's nxt[]). */
#define HTTP_OUT_NONE ((size_t)-1)

enum { HTTP_OUT_SIGN_NONE, HTTP_OUT_SIGN_STANDARD, HTTP_OUT_SIGN_HMAC };

struct http_out_conf {
    struct http_out_keys k;
    const char *url;         /* k.url */
    struct http_out_url u;
    const char *tls_ca;      /* k.tls_ca; NULL: the system CA store */
    struct gust_buf head;    /* owned: every request's start, up to "Content-Length: " */
    int64_t timeout_ms;      /* one request, from its write (connecting included) */
    size_t max_inflight;     /* requests of a batch written and not yet answered */
    size_t connections;      /* most connections open at once, all kept alive */
    size_t pipeline;         /* most requests outstanding on one connection */
    int64_t retry_max_delay_ms; /* longest pause a Retry-After imposes on the sink */
    /* Batching: on when batch_max > 1 or batch_bytes is set; then every request's body
     * is an array (or ndjson) of up to batch_max messages and batch_bytes bytes. */
    int batching;
    int ndjson;              /* batch_format ndjson, else json_array */
    size_t batch_max;
    size_t batch_bytes;      /* 0: no bound */
    int64_t batch_linger_ms;
    /* A json_array batch's body: wrap_pre, the messages with commas, wrap_post ("[" and
     * "]", or batch_wrap's text around its "[...]"). */
    const char *wrap_pre, *wrap_post;
    size_t wrap_pre_len, wrap_post_len;
    size_t batch_overhead; /* a batch's bytes besides its messages and their separators */
    /* Rate: requests a second (a batch is one), 0: none; the burst a bucket holds. */
    double rate;
    double rate_burst;
    struct http_out_tpl *tpl; /* owned: the templates of url, method, header, rate_key */
    /* The header key as pairs (owned), nhdr of them, and their "Name: value" lines: the
     * fixed ones first (`headers`, in the shared head), the templated ones NULL. */
    char **hdr_name, **hdr_value, **hdr_line;
    size_t nhdr;
    struct gust_list headers;
    const char *reply_to;    /* k.reply_to: where a 2xx's answer is published, or NULL */
    /* Message headers sent on as request headers: forward_headers, and traceparent and
     * tracestate always (http_out_fwd.c). Borrowed. */
    const char **fwd;
    size_t nfwd;
    /* sign (http_out_sign.c): HTTP_OUT_SIGN_*; hmac's encoding; the secret's key's
     * file:line, for the errors of its reading at start. */
    int sign;
    int sign_base64;
    char secret_where[256];
    /* Order (GUST_ORDER_*): `ordered on` is STREAM (every request is of the one key),
     * ordered_by KEY (its template renders each message's key). Within a call, a
     * request waits while one of its key is in flight, and fails (a RETRY, unsent) once
     * one of its key failed; see http_out_client.c. */
    int order;
};

/* The request header lines message m forwards ("Name: value\r\n" each, see conf->fwd),
 * appended to out; with out NULL only their length. Returns that length. */
size_t http_out_fwd(const struct http_out_conf *conf, const struct gust_msg *m, struct gust_buf *out);
/* Checks forward_headers and fills conf->fwd; file:line in err when a name is bad. */
int http_out_fwd_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err);

/* Why name cannot be a request header of the plugin's own making (not a header name, the
 * bus's Nats-*, one the plugin owns, one the header key sets), or NULL. */
const char *http_out_header_name_problem(const struct http_out_conf *conf, const char *name);
/* The value of m's header name (case-insensitive), NULL when it has none. */
const char *http_out_msg_header(const struct gust_msg *m, const char *name);

/* Signed requests (http_out_sign.c). Checks the sign keys (after http_out_fwd_load),
 * file:line in err. */
int http_out_sign_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                       struct gust_err *err);
/* Reads the secret (at start); *out stays NULL without sign. */
struct http_out_signer;
int http_out_signer_create(struct http_out_signer **out, const struct http_out_conf *conf, struct gust_err *err);
/* The webhook-id of a request carrying the n messages from first on (nxt[] links them):
 * borrowed from a message, or written into buf. */
const char *http_out_sign_id(const struct gust_msg *msgs, const size_t *nxt, size_t first, size_t n, char *buf,
                             size_t size);
/* Appends the signature's header lines ("Name: value\r\n" each) of a request with
 * webhook-id id and body[0..len), written at now_s (Unix seconds). 0, or -1 when out of
 * memory. */
int http_out_sign(const struct http_out_signer *s, const char *id, const char *body, size_t len, int64_t now_s,
                  struct gust_buf *out);
/* Wipes the secret. NULL is a no-op. */
void http_out_signer_destroy(struct http_out_signer *s);

/* 1 when m[0..len) is a method http_out sends: POST, PUT, PATCH. */
int http_out_method_ok(const char *m, size_t len);

/* The templates of an instance (http_out_tpl.c), NULL when it has none: then every
 * request has conf->head and no rate key. */
struct http_out_tpl;
/* Compiles the templated keys of conf->k into conf->tpl (left NULL when none is). */
int http_out_tpl_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err);
void http_out_tpl_free(struct http_out_tpl *t);
/* Appends m's request head (up to "Content-Length: ") to out (*head_len long, 0 when
 * the head is not templated), then its rate key (*key_len, 0: no rate_key), then its
 * order key (*ord_len, 0: no ordered_by). -1 with why (the dead letter's reason) when a
 * template cannot be rendered for m. */
int http_out_tpl_render(const struct http_out_conf *conf, const struct gust_msg *m, struct gust_buf *out,
                        size_t *head_len, size_t *key_len, size_t *ord_len, char *why, size_t whysz);

/* ordered_by's memory across calls (http_out_order.c): per key, the stream sequences
 * of the messages that went back to the bus (a RETRY) and have not gone since. */
struct http_out_order;
int http_out_order_create(struct http_out_order **out);
void http_out_order_destroy(struct http_out_order *o);
/* The first sequence below seq that key still holds, or 0 when none: then seq may go. */
uint64_t http_out_order_before(struct http_out_order *o, const char *key, size_t len, uint64_t seq);
/* Whether key holds a sequence between lo and hi (both excluded). */
int http_out_order_between(struct http_out_order *o, const char *key, size_t len, uint64_t lo, uint64_t hi);
/* Whether key holds any. */
int http_out_order_holds(struct http_out_order *o, const char *key, size_t len);
/* seq of key went back to the bus (seen at now, gust_clock_mono_ms); -1: out of memory. */
int http_out_order_hold(struct http_out_order *o, const char *key, size_t len, uint64_t seq, int64_t now);
/* seq of key went (delivered or rejected). */
void http_out_order_done(struct http_out_order *o, const char *key, size_t len, uint64_t seq);
/* Forgets what was not seen again for long (at most once a second). */
void http_out_order_sweep(struct http_out_order *o, int64_t now);
/* Keys holding messages, and how many they hold. Thread-safe. */
void http_out_order_counts(const struct http_out_order *o, uint64_t *keys, uint64_t *events);

/* Binds and checks the keys of cfg (borrowed), naming file:line of a bad value in err. */
int http_out_conf_load(struct http_out_conf *conf, const struct gust_host_api *api,
                       const struct gust_cfg *cfg, struct gust_err *err);
void http_out_conf_free(struct http_out_conf *conf);

/* One response being read (http_out_resp.c). */
struct http_out_resp {
    int state;
    int status;
    int keep_alive; /* the server keeps the connection open after this answer */
    int has_retry_after;    /* a valid Retry-After came: */
    int64_t retry_after_ms; /* how long from now it asks to wait (0 for a date past) */
    uint64_t left;  /* bytes left in the body or the current chunk */
    size_t body_len;
    char body[HTTP_OUT_BODY_KEEP]; /* the first bytes of the body */
    /* When whole is set (reply_to), the whole body up to whole_max bytes goes there too,
     * and whole_over says it was longer. Kept by http_out_resp_reset (whole emptied). */
    struct gust_buf *whole;
    size_t whole_max;
    int whole_over;
    char ctype[128]; /* Content-Type (printable, shorter than this), or "" */
};

void http_out_resp_reset(struct http_out_resp *r);
/* Reads what it can of buf[0..len) (borrowed) into r; returns the bytes used. *done is
 * set when the response is complete (the bytes after it belong to the next one). Returns
 * -1 with *why (a literal) when the stream is not HTTP/1.x. */
ssize_t http_out_resp_feed(struct http_out_resp *r, const char *buf, size_t len, int *done,
                           const char **why);
/* The delay a Retry-After value v[0..len) asks for, in ms from now_s (unix seconds):
 * delay-seconds or an HTTP-date (IMF-fixdate, RFC 9110), a date in the past being 0.
 * -1 when it is neither. */
int64_t http_out_retry_after_ms(const char *v, size_t len, int64_t now_s);
/* Whether the server closing the connection now completes the response. */
int http_out_resp_ends_at_eof(const struct http_out_resp *r);

struct http_out_client;

/* conf is borrowed and must outlive the client. Loads the TLS trust for https; opens no
 * connection yet. */
int http_out_client_create(struct http_out_client **out, const struct http_out_conf *conf,
                           struct gust_err *err);
/* Sends every msgs[i] and fills results[i] (see gust_plugin_type.deliver), in batches
 * when conf->batching, at conf->rate. Returns 0. */
int http_out_client_deliver(struct http_out_client *cl, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results);
/* A call waits for the outage pause's next probe up to a third of ack_wait_ms (nats
 * ack_wait), no longer: what it holds must be sent before the bus delivers it again. */
void http_out_client_set_ack_wait(struct http_out_client *cl, int64_t ack_wait_ms);
/* The outage pause's counters (see gust_plugin_type.counters): outage (1 while the far
 * end is down), outages, probes. Thread-safe. */
size_t http_out_client_counters(struct http_out_client *cl, struct gust_plugin_counter *out, size_t max);
/* reply_to: the 2xx answer message m of the last deliver call got (status, body,
 * Content-Type, all borrowed until the next call); 0, or -1 when it got none. */
struct http_out_answer {
    int status;
    const char *body;
    size_t len;
    const char *ctype; /* "" when none */
};
int http_out_client_answer(const struct http_out_client *cl, size_t m, struct http_out_answer *a);
/* Closes the connections. NULL is a no-op. */
void http_out_client_destroy(struct http_out_client *cl);

/* reply_to's publisher (http_out_reply.c), between start and stop. */
struct http_out_reply;
int http_out_reply_create(struct http_out_reply **out, const struct gust_host_api *api, struct gust_instance *inst,
                          const struct http_out_conf *conf, struct gust_err *err);
/* After the client's deliver: publishes the answer of every DELIVERED message and waits
 * for their PubAcks; one not stored makes its message a RETRY. */
void http_out_reply_publish(struct http_out_reply *r, struct http_out_client *cl, const struct gust_msg *msgs,
                            size_t n, struct gust_result *results);
/* Waits for the publishes still due. NULL is a no-op. */
void http_out_reply_destroy(struct http_out_reply *r);

#endif
