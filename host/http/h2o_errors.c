/* The answers h2o 2.2.5 makes by itself, made Gust's: {"error": "..."} in JSON.
 *
 * h2o answers some requests before any handler runs (lib/http1.c, lib/core/request.c):
 *
 *   1. Errors while reading the body (a Content-Length over max_request_entity_size,
 *      a broken chunked encoding, an unknown Transfer-Encoding, a bad Content-Length)
 *      and an unknown Expect: h2o_send_error_generic, a text/plain response that goes
 *      through the path's filters like any other. A filter here rewrites it.
 *   2. A request line or headers it cannot parse, more than H2O_MAX_HEADERS (100)
 *      header lines, or a head over H2O_MAX_REQLEN: send_bad_request writes a fixed
 *      "400 Bad Request" in plain text straight to the socket, with no hook. It does
 *      so when picohttpparser's phr_parse_request, which libh2o calls through the PLT,
 *      fails. Gust defines phr_parse_request itself: it calls libh2o's (found with
 *      dlsym(RTLD_NEXT)) and, where h2o would send that text, returns a made-up
 *      request for a path no client can send (it starts with a control character,
 *      which the real parser refuses), one per reason. The route handler sees it
 *      first (gust_h2o_bad_request) and answers in JSON; the request is HTTP/1.0
 *      without keep-alive, so h2o then closes the connection, as it would have. The
 *      e2e test of 1 000 headers fails if a build of libh2o stops calling through
 *      the PLT.
 *
 * Either way the connection closes while the client may still be sending (a body h2o
 * would not read): the answer arms a lingering close (linger.c), so the client gets to
 * read it instead of a reset. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "internal.h"

/* picohttpparser's interface, as libh2o 2.2.5 exports it (its header is not installed). */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len, const char **path,
                      size_t *path_len, int *minor_version, struct phr_header *headers, size_t *num_headers,
                      size_t last_len);

typedef int (*parse_fn)(const char *, size_t, const char **, size_t *, const char **, size_t *, int *,
                        struct phr_header *, size_t *, size_t);
static parse_fn real_parse;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void find_real_parse(void)
{
    real_parse = (parse_fn)dlsym(RTLD_NEXT, "phr_parse_request");
}

/* The made-up paths, told apart by their address; the text only shows in debug logs. */
static const char malformed_path[] = "/\x01gust:malformed-request";
static const char too_many_path[] = "/\x01gust:too-many-headers";
static const char too_long_path[] = "/\x01gust:head-too-long";

/* More header lines than any request within H2O_MAX_REQLEN can hold in h2o's array,
 * for telling "too many" from "malformed". */
#define RECOUNT_HEADERS 4096

/* 1 when h2o handles the failure itself without its text 400: the HTTP/2 preface
 * (an upgrade to HTTP/2) and a few stray line ends (closed in silence). */
static int h2o_handles(const char *buf, size_t len)
{
    static const char preface[] = "PRI * HTTP/2";
    if (len >= sizeof(preface) - 1 && memcmp(buf, preface, sizeof(preface) - 1) == 0) {
        return 1;
    }
    if (len > 4) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\r' && buf[i] != '\n') {
            return 0;
        }
    }
    return 1;
}

static const char *failure_path(const char *buf, size_t len, int rc, size_t max_headers)
{
    if (rc == -2) {
        return too_long_path;
    }
    if (max_headers < RECOUNT_HEADERS) {
        static struct phr_header many[RECOUNT_HEADERS]; /* the HTTP thread only */
        const char *m, *p;
        size_t ml, pl, n = RECOUNT_HEADERS;
        int minor;
        int again = real_parse(buf, len, &m, &ml, &p, &pl, &minor, many, &n, 0);
        if (again != -1 && n > max_headers) {
            return too_many_path;
        }
    }
    return malformed_path;
}

int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len, const char **path,
                      size_t *path_len, int *minor_version, struct phr_header *headers, size_t *num_headers,
                      size_t last_len)
{
    pthread_once(&real_once, find_real_parse);
    size_t max_headers = *num_headers;
    int rc = real_parse(buf, len, method, method_len, path, path_len, minor_version, headers, num_headers,
                        last_len);
    /* h2o reads at most H2O_MAX_REQLEN bytes of head: incomplete there is its 400 too. */
    if (rc >= 0 || (rc == -2 && len < H2O_MAX_REQLEN) || (rc == -1 && h2o_handles(buf, len))) {
        return rc;
    }
    const char *p = failure_path(buf, len, rc, max_headers);
    *method = "GET";
    *method_len = 3;
    *path = p;
    *path_len = strlen(p);
    *minor_version = 0; /* HTTP/1.0 without keep-alive: h2o closes after the answer */
    *num_headers = 0;
    return (int)len; /* all of it read: nothing after it is taken for a request */
}

int gust_h2o_bad_request(h2o_req_t *req, int *status, char *why, size_t size)
{
    const char *p = req->input.path.base;
    if (p == malformed_path) {
        *status = 400;
        snprintf(why, size, "malformed request line or headers");
    } else if (p == too_many_path) {
        *status = 431;
        snprintf(why, size, "more than %d request header lines", H2O_MAX_HEADERS);
    } else if (p == too_long_path) {
        *status = 431;
        snprintf(why, size, "request line and headers over %d bytes", H2O_MAX_REQLEN);
    } else {
        return 0;
    }
    return 1;
}

/* ---- errors h2o sends through the filters ---- */

struct json_errors {
    h2o_filter_t super;
    struct gust_http *http;
};

struct rewrite {
    h2o_ostream_t super;
    struct gust_http *http;
};

static int is_json(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
    return i >= 0 && h2o_memis(req->res.headers.entries[i].value.base, req->res.headers.entries[i].value.len,
                               H2O_STRLIT("application/json"));
}

/* h2o's error bodies come from h2o_send_inline: a short text, all of it in one final
 * send (none for HEAD). It becomes the message, but for 413, which says what the limit is. */
static void rewrite_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t bufcnt,
                         h2o_send_state_t state)
{
    struct rewrite *r = (struct rewrite *)self;
    char msg[160];
    size_t n = 0;
    for (size_t i = 0; i < bufcnt && n < 120; i++) {
        size_t take = bufs[i].len < 120 - n ? bufs[i].len : 120 - n;
        memcpy(msg + n, bufs[i].base, take);
        n += take;
    }
    msg[n] = '\0';
    if (req->res.status == 413) {
        snprintf(msg, sizeof(msg), "body over %zu bytes", gust_http_policy(r->http)->s.max_body);
    } else if (n == 0) {
        snprintf(msg, sizeof(msg), "%s", req->res.reason != NULL ? req->res.reason : "request refused");
    }
    struct gust_buf body = {0};
    gust_buf_append(&body, "{\"error\":", 9);
    gust_json_append_string(&body, msg, strlen(msg));
    gust_buf_append(&body, "}\n", 2);
    h2o_iovec_t out = h2o_strdup(&req->pool, body.data != NULL ? body.data : "", body.len);
    gust_buf_free(&body);
    req->res.content_length = out.len; /* the headers go out with the first send below */
    gust_metrics_count_request(GUST_ROUTE_OTHER, req->res.status);
    gust_debug("http: h2o's own %d (%s) answered in JSON", req->res.status, msg);
    int head = h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD"));
    (void)state; /* final: see above */
    h2o_ostream_send_next(self, req, &out, head ? 0 : 1, H2O_SEND_STATE_FINAL);
}

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    struct json_errors *f = (struct json_errors *)self;
    if (req->res.status >= 400) {
        if (!is_json(req)) {
            /* Made by h2o: every route of ours answers its errors in JSON. */
            ssize_t ct = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
            if (ct >= 0) {
                req->res.headers.entries[ct].value = h2o_iovec_init(H2O_STRLIT("application/json"));
            } else {
                h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                               H2O_STRLIT("application/json"));
            }
            struct rewrite *r = (struct rewrite *)h2o_add_ostream(req, sizeof(*r), slot);
            r->super.do_send = rewrite_send;
            r->http = f->http;
            slot = &r->super.next;
        }
        if (!req->http1_is_persistent) {
            gust_linger_arm(f->http, req);
        }
    }
    h2o_setup_next_ostream(req, slot);
}

void gust_h2o_errors_register(struct gust_http *http, h2o_pathconf_t *pathconf)
{
    struct json_errors *f = (struct json_errors *)h2o_create_filter(pathconf, sizeof(*f));
    f->super.on_setup_ostream = on_setup_ostream;
    f->http = http;
}
