/* Delivering a batch with libcurl's multi interface.
 *
 * One CURLM and a fixed pool of easy handles live as long as the instance, so the
 * connection cache (which belongs to the CURLM) keeps connections alive from batch to
 * batch, and each handle's options are set once.
 *
 * HTTP/1.1 carries one request at a time per connection (libcurl no longer pipelines), so
 * the pool has min(max_inflight, connections) handles. Handing libcurl more than it may
 * open connections for was measured: the extra ones wait in its pending queue, and
 * libcurl 7.88 wakes them late (2.9k requests/s instead of 23k, with stalls of a second). */
#define _GNU_SOURCE /* strerror_r returning char * */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

/* How much of a refusing server's answer goes into the dead-letter error text. */
#define BODY_KEEP 120

struct slot {
    CURL *easy;
    size_t msg;          /* index in the batch being delivered */
    size_t body_len;     /* bytes kept in body */
    char body[BODY_KEEP]; /* start of the response body */
    char errbuf[CURL_ERROR_SIZE];
};

struct http_out_client {
    const struct http_out_conf *conf;
    CURLM *multi;
    struct slot *slots; /* nslots of them */
    size_t nslots;
    size_t *idle;       /* stack of indexes of slots not in a transfer */
    size_t nidle;
};

static size_t keep_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct slot *s = ud;
    size_t len = size * nmemb, room = BODY_KEEP - s->body_len;

    memcpy(s->body + s->body_len, data, len < room ? len : room);
    s->body_len += len < room ? len : room;
    return len; /* read it all anyway, or the connection could not be reused */
}

static int setup_easy(struct http_out_client *cl, struct slot *s)
{
    const struct http_out_conf *conf = cl->conf;
    CURL *e = s->easy;

    if (curl_easy_setopt(e, CURLOPT_URL, conf->url) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, conf->headers) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, conf->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, conf->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK ||
        /* No SIGALRM from name resolution: deliver runs on a host thread. */
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        /* The URL in host.conf is where it goes; http_proxy from the environment would make
         * a daemon's deliveries depend on who started it. */
        curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_body) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEDATA, s) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->errbuf) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_PRIVATE, s) != CURLE_OK) {
        return -1;
    }
    if (conf->put && curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT") != CURLE_OK) {
        return -1;
    }
    return 0;
}

int http_out_client_create(struct http_out_client **out, const struct http_out_conf *conf,
                           struct gust_err *err)
{
    struct http_out_client *cl = calloc(1, sizeof(*cl));
    size_t n = conf->max_inflight < (size_t)conf->connections ? conf->max_inflight
                                                               : (size_t)conf->connections;

    *out = NULL;
    if (!cl || !(cl->slots = calloc(n, sizeof(*cl->slots))) ||
        !(cl->idle = calloc(n, sizeof(*cl->idle))) || !(cl->multi = curl_multi_init())) {
        goto fail;
    }
    cl->conf = conf;
    cl->nslots = n;
    if (curl_multi_setopt(cl->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, conf->connections) !=
            CURLM_OK ||
        curl_multi_setopt(cl->multi, CURLMOPT_MAXCONNECTS, conf->connections) != CURLM_OK) {
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(cl->slots[i].easy = curl_easy_init()) || setup_easy(cl, &cl->slots[i]) != 0) {
            goto fail;
        }
        cl->idle[cl->nidle++] = i;
    }
    *out = cl;
    return 0;

fail:
    http_out_client_destroy(cl);
    return gust_err_set(err, GUST_ENOMEM, "http_out: cannot set up libcurl (out of memory?)");
}

void http_out_client_destroy(struct http_out_client *cl)
{
    if (!cl) {
        return;
    }
    if (cl->slots) {
        for (size_t i = 0; i < cl->nslots; i++) {
            if (cl->slots[i].easy) {
                curl_multi_remove_handle(cl->multi, cl->slots[i].easy);
                curl_easy_cleanup(cl->slots[i].easy);
            }
        }
    }
    curl_multi_cleanup(cl->multi);
    free(cl->slots);
    free(cl->idle);
    free(cl);
}

static void result_set(struct gust_result *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void result_set(struct gust_result *r, int status, const char *fmt, ...)
{
    va_list ap;
    r->status = status;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
}

/* The outcome of a finished transfer: see the table at the top of http_out.c. */
static void classify(const struct http_out_client *cl, struct slot *s, CURLcode code,
                     struct gust_result *r)
{
    const char *url = cl->conf->url;
    long status = 0, os_errno = 0;
    char buf[128];

    if (code == CURLE_OPERATION_TIMEDOUT) {
        result_set(r, GUST_RETRY, "timeout after %ld ms", cl->conf->timeout_ms);
        return;
    }
    if (code == CURLE_COULDNT_CONNECT &&
        curl_easy_getinfo(s->easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno) {
        result_set(r, GUST_RETRY, "connect: %s", strerror_r((int)os_errno, buf, sizeof(buf)));
        return;
    }
    if (code != CURLE_OK) {
        result_set(r, GUST_RETRY, "%s", s->errbuf[0] ? s->errbuf : curl_easy_strerror(code));
        return;
    }
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        r->status = GUST_DELIVERED;
        r->error[0] = '\0';
    } else if (status >= 500 || status == 408 || status == 429) {
        result_set(r, GUST_RETRY, "http %ld from %s", status, url);
    } else {
        /* Any other answer (4xx, or a redirect, which is not followed) will not change by
         * itself; what the server said comes along, made printable, for the dead letter. */
        for (size_t i = 0; i < s->body_len; i++) {
            if ((unsigned char)s->body[i] < 0x20 || s->body[i] == 0x7f) {
                s->body[i] = ' ';
            }
        }
        result_set(r, GUST_REJECTED, "http %ld from %s: %.*s", status, url, (int)s->body_len,
                   s->body);
    }
}

static int start(struct http_out_client *cl, const struct gust_msg *m, size_t i)
{
    struct slot *s = &cl->slots[cl->idle[cl->nidle - 1]];

    s->msg = i;
    s->body_len = 0;
    s->errbuf[0] = '\0';
    /* POSTFIELDS does not copy: the message is borrowed until deliver returns, and the
     * transfer ends before that. */
    if (curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)m->len) != CURLE_OK ||
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, m->len ? m->data : "") != CURLE_OK ||
        curl_multi_add_handle(cl->multi, s->easy) != CURLM_OK) {
        return -1;
    }
    cl->nidle--;
    return 0;
}

/* Collects the finished transfers; returns how many. */
static size_t harvest(struct http_out_client *cl, struct gust_result *results)
{
    CURLMsg *m;
    int left;
    size_t done = 0;

    while ((m = curl_multi_info_read(cl->multi, &left))) {
        struct slot *s;
        if (m->msg != CURLMSG_DONE) {
            continue;
        }
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        classify(cl, s, m->data.result, &results[s->msg]);
        curl_multi_remove_handle(cl->multi, s->easy);
        cl->idle[cl->nidle++] = (size_t)(s - cl->slots);
        done++;
    }
    return done;
}

/* Ends every transfer still running, so the handles are idle for the next batch. */
static void abort_all(struct http_out_client *cl)
{
    for (size_t i = 0; i < cl->nslots; i++) {
        curl_multi_remove_handle(cl->multi, cl->slots[i].easy);
        cl->idle[i] = i;
    }
    cl->nidle = cl->nslots;
}

int http_out_client_deliver(struct http_out_client *cl, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results, struct gust_err *err)
{
    size_t next = 0, done = 0;
    CURLMcode mc = CURLM_OK;
    int running;

    while (done < n) {
        for (; next < n && cl->nidle > 0; next++) {
            if (start(cl, &msgs[next], next) != 0) {
                abort_all(cl);
                return gust_err_set(err, GUST_ENOMEM, "http_out: cannot start a request");
            }
        }
        if ((mc = curl_multi_perform(cl->multi, &running)) != CURLM_OK) {
            break;
        }
        size_t got = harvest(cl, results);
        done += got;
        /* Freed handles take the next messages at once; otherwise wait for the sockets
         * (libcurl bounds the wait by its own timeouts). */
        if (done < n && !(got && next < n) &&
            (mc = curl_multi_poll(cl->multi, NULL, 0, 1000, NULL)) != CURLM_OK) {
            break;
        }
    }
    if (mc != CURLM_OK) {
        abort_all(cl);
        return gust_err_set(err, GUST_EIO, "http_out: libcurl: %s", curl_multi_strerror(mc));
    }
    return 0;
}
