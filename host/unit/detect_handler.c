/* A detect unit: a VPL program fed with the unit's messages in stream order; its
 * alerts are emits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conf/subject.h"
#include "../vpl/vpl.h"
#include "handlers.h"

struct binding {
    char *subject;
    const char *event_type; /* borrowed from the program */
};

struct output {
    const char *stream; /* borrowed from the program */
    char *subject;
};

struct detect {
    struct vpl_program *prog;
    struct vpl_engine *eng;
    struct binding *bind;
    size_t nbind;
    struct output *out;
    size_t nout;
    struct gust_batch *batch; /* during a feed */
    size_t msg;
    int push_failed;
};

static void on_alert(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)topic; /* resolved once, with the default, in struct output */
    struct detect *d = ud;
    for (size_t i = 0; i < d->nout; i++) {
        if (strcmp(d->out[i].stream, stream) == 0) {
            if (gust_emits_push(&d->batch->emits, d->out[i].subject, json, len) != 0) {
                d->push_failed = 1;
            }
            return;
        }
    }
}

static void detect_run_batch(void *impl, struct gust_batch *b)
{
    struct detect *d = impl;
    d->batch = b;
    for (size_t i = 0; i < b->n; i++) {
        const struct gust_msg *m = &b->msgs[i];
        const char *type = NULL;
        for (size_t k = 0; k < d->nbind; k++) {
            if (strcmp(d->bind[k].subject, m->subject) == 0) {
                type = d->bind[k].event_type;
                break;
            }
        }
        /* The consumer's filter may be wider than the program's subjects (one consumer
         * keeps stream order): what no .from() names is not the program's. */
        if (type != NULL) {
            d->push_failed = 0;
            int rc = vpl_engine_feed_json(d->eng, m->data, m->len, type, m->stored_ns / 1000000, on_alert, d);
            if (rc == VPL_EJSON) {
                b->outcome[i] = GUST_OUTCOME_DEAD;
                snprintf(b->error[i], GUST_ERROR_MAX, "%s", vpl_engine_last_error(d->eng));
            } else if (rc != 0 || d->push_failed) {
                b->outcome[i] = GUST_OUTCOME_RETRY;
                snprintf(b->error[i], GUST_ERROR_MAX, "out of memory");
            }
        }
        b->emit_end[i] = b->emits.n;
    }
    d->batch = NULL;
}

static void detect_destroy(void *impl)
{
    struct detect *d = impl;
    if (d == NULL) {
        return;
    }
    vpl_engine_destroy(d->eng);
    vpl_program_destroy(d->prog);
    for (size_t i = 0; i < d->nbind; i++) {
        free(d->bind[i].subject);
    }
    for (size_t i = 0; i < d->nout; i++) {
        free(d->out[i].subject);
    }
    free(d->bind);
    free(d->out);
    free(d);
}

static char *dup_printf(const char *fmt, const char *a, const char *b, const char *c)
{
    int n = snprintf(NULL, 0, fmt, a, b, c);
    char *s = malloc((size_t)n + 1);
    if (s != NULL) {
        snprintf(s, (size_t)n + 1, fmt, a, b, c);
    }
    return s;
}

/* The narrowest filter one consumer can use for every subject: the subject itself when
 * there is one, else the tokens they all share followed by '>'. */
static char *common_filter(const struct binding *bind, size_t n)
{
    const char *first = bind[0].subject;
    size_t len = strlen(first);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < len && bind[i].subject[k] == first[k]) {
            k++;
        }
        if (k < len || bind[i].subject[k] != '\0') {
            while (k > 0 && first[k - 1] != '.') {
                k--; /* keep whole tokens only */
            }
            len = k;
        }
    }
    if (first[len] == '\0') {
        return strdup(first);
    }
    char *f = malloc(len + 2);
    if (f != NULL) {
        memcpy(f, first, len);
        f[len] = '>';
        f[len + 1] = '\0';
    }
    return f;
}

int gust_detect_handler_create(const char *unit, const char *prefix, const char *src, size_t len, const char *path,
                               struct gust_handler *out, char **filter, struct gust_err *err)
{
    struct detect *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    struct vpl_error verr = {0};
    int rc = GUST_ECONFIG;
    if (vpl_program_compile(src, len, path, &d->prog, &verr) != 0 ||
        vpl_engine_create(d->prog, NULL, &d->eng, &verr) != 0) {
        gust_err_set(err, GUST_ECONFIG, "%s:%s", path, verr.msg);
        goto fail;
    }
    const struct vpl_binding *b = NULL;
    size_t nb = vpl_program_bindings(d->prog, &b);
    const struct vpl_output *o = NULL;
    size_t no = vpl_program_outputs(d->prog, &o);
    if (nb == 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: the program reads nothing: bind an event type with "
                          "Type.from(Conn, topic: \"ev.x\")", path);
        goto fail;
    }
    d->bind = calloc(nb + 1, sizeof(*d->bind));
    d->out = calloc(no + 1, sizeof(*d->out));
    if (d->bind == NULL || d->out == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < nb; i++) {
        /* .from(Conn) without a topic reads <prefix><EventType>. */
        d->bind[i].subject = b[i].topic != NULL ? strdup(b[i].topic) : dup_printf("%s%s%s", prefix, b[i].event_type, "");
        d->bind[i].event_type = b[i].event_type;
        d->nbind++;
        if (d->bind[i].subject == NULL) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
            goto fail;
        }
        if (!gust_subject_valid(d->bind[i].subject, strlen(d->bind[i].subject), 0)) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: .from(%s) reads '%s', which is not a subject without wildcards",
                              path, b[i].event_type, d->bind[i].subject);
            goto fail;
        }
    }
    for (size_t i = 0; i < no; i++) {
        d->out[i].stream = o[i].stream;
        d->out[i].subject = o[i].topic != NULL ? strdup(o[i].topic) : dup_printf("%sdetect.%s.%s", prefix, unit,
                                                                                     o[i].stream);
        d->nout++;
        if (d->out[i].subject == NULL) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
            goto fail;
        }
        if (!gust_subject_valid(d->out[i].subject, strlen(d->out[i].subject), 0)) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: stream %s sends to '%s', which is not a subject", path,
                              o[i].stream, d->out[i].subject);
            goto fail;
        }
    }
    *filter = common_filter(d->bind, d->nbind);
    if (*filter == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    *out = (struct gust_handler){.kind = "detect", .impl = d, .run_batch = detect_run_batch, .destroy = detect_destroy};
    return 0;
fail:
    detect_destroy(d);
    return rc;
}
