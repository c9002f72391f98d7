/* One GET at a time with libcurl's multi interface, so stop() can interrupt it:
 * curl_multi_poll() returns at once after curl_multi_wakeup(), which is thread-safe,
 * whereas an easy handle's progress callback runs only about once a second.
 *
 * The easy handle lives as long as the instance, so its connection is kept alive from
 * poll to poll. Redirects are not followed: a 3xx is an HTTP error like any other, and
 * the secret headers never go to another host. */
#define _GNU_SOURCE /* strerror_r returning char * */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_poll.h"

struct http_poll_fetch {
    const struct http_poll_conf *conf;
    struct gust_source_runner *core;
    CURLM *multi;
    CURL *easy;
    char *body;
    size_t len, cap;
    int too_large;
    char errbuf[CURL_ERROR_SIZE];
};

static size_t keep_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct http_poll_fetch *f = ud;
    size_t n = size * nmemb;

    if (f->len + n > f->conf->max_body) {
        f->too_large = 1;
        return 0; /* aborts the transfer */
    }
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 16384;
        char *b;
        while (cap < f->len + n + 1) {
            cap *= 2;
        }
        if (!(b = realloc(f->body, cap))) {
            return 0;
        }
        f->body = b;
        f->cap = cap;
    }
    memcpy(f->body + f->len, data, n);
    f->len += n;
    return n;
}

int http_poll_fetch_create(struct http_poll_fetch **out, const struct http_poll_conf *conf,
                           struct gust_source_runner *core, struct gust_err *err)
{
    struct http_poll_fetch *f = calloc(1, sizeof(*f));
    CURL *e;

    *out = NULL;
    if (!f || !(f->multi = curl_multi_init()) || !(f->easy = curl_easy_init())) {
        goto fail;
    }
    f->conf = conf;
    f->core = core;
    e = f->easy;
    if (curl_easy_setopt(e, CURLOPT_URL, conf->url) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, conf->headers) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_USERAGENT, "gust-http_poll/0.1") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)conf->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)conf->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        /* What host.conf says, not what the environment of whoever started gust says. */
        curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_body) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEDATA, f) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->errbuf) != CURLE_OK) {
        goto fail;
    }
    *out = f;
    return 0;

fail:
    http_poll_fetch_destroy(f);
    return gust_err_set(err, GUST_ENOMEM, "cannot set up libcurl (out of memory?)");
}

void http_poll_fetch_destroy(struct http_poll_fetch *f)
{
    if (!f) {
        return;
    }
    if (f->easy) {
        curl_multi_remove_handle(f->multi, f->easy);
        curl_easy_cleanup(f->easy);
    }
    curl_multi_cleanup(f->multi);
    free(f->body);
    free(f);
}

void http_poll_fetch_wake(struct http_poll_fetch *f)
{
    if (f) {
        curl_multi_wakeup(f->multi);
    }
}

int http_poll_fetch_get(struct http_poll_fetch *f, long *status, const char **body, size_t *len, char *why,
                        size_t why_size)
{
    CURLcode code = CURLE_OK;
    int running = 1, done = 0, stopped = 0;
    long os_errno = 0;
    char buf[128];

    f->len = 0;
    f->too_large = 0;
    f->errbuf[0] = '\0';
    if (curl_multi_add_handle(f->multi, f->easy) != CURLM_OK) {
        snprintf(why, why_size, "libcurl refused the transfer");
        return GUST_EIO;
    }
    while (running) {
        if (curl_multi_perform(f->multi, &running) != CURLM_OK) {
            break;
        }
        if (!running) {
            break;
        }
        if (gust_source_stopping(f->core)) {
            stopped = 1;
            break;
        }
        curl_multi_poll(f->multi, NULL, 0, 1000, NULL);
    }
    for (CURLMsg *m; (m = curl_multi_info_read(f->multi, &running)) != NULL;) {
        if (m->msg == CURLMSG_DONE && m->easy_handle == f->easy) {
            code = m->data.result;
            done = 1;
        }
    }
    curl_multi_remove_handle(f->multi, f->easy);
    if (stopped || !done) {
        snprintf(why, why_size, "stopped");
        return GUST_EAGAIN;
    }
    if (f->too_large) {
        snprintf(why, why_size, "body larger than max_body (%zu bytes)", f->conf->max_body);
        return GUST_EINVAL;
    }
    if (code == CURLE_OPERATION_TIMEDOUT) {
        snprintf(why, why_size, "timeout after %lld ms", (long long)f->conf->timeout_ms);
        return GUST_EIO;
    }
    if (code == CURLE_COULDNT_CONNECT &&
        curl_easy_getinfo(f->easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno) {
        snprintf(why, why_size, "connect: %s", strerror_r((int)os_errno, buf, sizeof(buf)));
        return GUST_EIO;
    }
    if (code != CURLE_OK) {
        /* libcurl's messages name the host and port at most, never headers. */
        snprintf(why, why_size, "%s", f->errbuf[0] ? f->errbuf : curl_easy_strerror(code));
        return GUST_EIO;
    }
    curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, status);
    *body = f->body ? f->body : "";
    *len = f->len;
    return 0;
}
