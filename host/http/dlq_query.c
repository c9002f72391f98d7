#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "dlq_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../conf/subject.h"
#include "query.h"

/* Digits only, and within 64 bits (strtoull would take "-1", " 1" and, past the top,
 * give its maximum). */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) {
            return 0;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}

/* Parameter name of the query into v: -1 when absent, 0 when there, 1 when it does not
 * fit v or holds a NUL (%00), which a name or a number never does: refused, rather than
 * read as the text before the cut. */
static int param(const char *query, size_t qlen, const char *name, char *v, size_t size)
{
    long n = gust_query_get(query, qlen, name, v, size);
    if (n < 0) {
        return -1;
    }
    return (size_t)n >= size || strlen(v) != (size_t)n;
}

/* A unit name as it appears in a subject: one token, no wildcards. */
static int unit_valid(const char *u)
{
    size_t len = strlen(u);
    return len > 0 && memchr(u, '.', len) == NULL && gust_subject_valid(u, len, 0);
}

const char *gust_dlq_query_parse(const char *query, size_t qlen, const char *body_text, size_t blen,
                                 struct gust_dlq_query *q)
{
    char v[160];
    int p;
    if ((p = param(query, qlen, "unit", v, sizeof(q->unit))) >= 0) {
        if (p > 0) {
            return "unit: not a unit name";
        }
        memcpy(q->unit, v, strlen(v) + 1);
    }
    if ((p = param(query, qlen, "seq", v, sizeof(v))) >= 0 &&
        (p > 0 || !parse_u64(v, &q->seq) || q->seq == 0)) {
        return "seq: expected a positive integer";
    }
    if ((p = param(query, qlen, "after_seq", v, sizeof(v))) >= 0 && (p > 0 || !parse_u64(v, &q->after_seq))) {
        return "after_seq: expected an integer";
    }
    uint64_t limit = 0;
    if ((p = param(query, qlen, "limit", v, sizeof(v))) >= 0) {
        if (p > 0 || !parse_u64(v, &limit) || limit == 0 || limit > SIZE_MAX) {
            return "limit: expected a positive integer";
        }
        q->limit = (size_t)limit;
    }
    if ((p = param(query, qlen, "all", v, sizeof(v))) >= 0) {
        q->all = p > 0 || (strcmp(v, "0") != 0 && strcmp(v, "false") != 0);
    }
    if (blen > 0) {
        char *text = malloc(blen + 1); /* yajl's tree parser wants a NUL-terminated buffer */
        if (text == NULL) {
            return "out of memory";
        }
        memcpy(text, body_text, blen);
        text[blen] = '\0';
        char perr[128];
        yajl_val body = yajl_tree_parse(text, perr, sizeof(perr));
        free(text);
        if (body == NULL || !YAJL_IS_OBJECT(body)) {
            yajl_tree_free(body);
            return "body: expected a JSON object such as {\"seq\": 12}, {\"unit\": \"orders\"} or {\"all\": "
                   "true}";
        }
        const char *p_seq[] = {"seq", NULL}, *p_unit[] = {"unit", NULL}, *p_all[] = {"all", NULL},
                   *p_limit[] = {"limit", NULL};
        yajl_val s = yajl_tree_get(body, p_seq, yajl_t_number);
        yajl_val u = yajl_tree_get(body, p_unit, yajl_t_string);
        yajl_val a = yajl_tree_get(body, p_all, yajl_t_any);
        yajl_val l = yajl_tree_get(body, p_limit, yajl_t_number);
        const char *bad = NULL;
        if (s != NULL) {
            if (!YAJL_IS_INTEGER(s) || YAJL_GET_INTEGER(s) <= 0) {
                bad = "seq: expected a positive integer";
            } else {
                q->seq = (uint64_t)YAJL_GET_INTEGER(s);
            }
        }
        if (u != NULL) {
            /* yajl's tree ends a string at a \u0000 in it: look for one in the text, so
             * "orders\u0000x" is not taken for "orders". */
            const char *us = YAJL_GET_STRING(u);
            if (strlen(us) >= sizeof(q->unit) || memmem(body_text, blen, "\\u0000", 6) != NULL) {
                bad = "unit: not a unit name";
            } else {
                memcpy(q->unit, us, strlen(us) + 1);
            }
        }
        if (a != NULL) {
            q->all = YAJL_IS_TRUE(a);
        }
        if (l != NULL) {
            if (!YAJL_IS_INTEGER(l) || YAJL_GET_INTEGER(l) <= 0) {
                bad = "limit: expected a positive integer";
            } else {
                q->limit = (size_t)YAJL_GET_INTEGER(l);
            }
        }
        yajl_tree_free(body);
        if (bad != NULL) {
            return bad;
        }
    }
    if (q->unit[0] != '\0' && !unit_valid(q->unit)) {
        return "unit: not a unit name";
    }
    return NULL;
}
