/* What a DLQ request asks for: parsed from its query string and JSON body, with no bus
 * and no h2o (dlq_routes.c does the JetStream calls), so it can be fuzzed on its own. */
#ifndef GUST_HTTP_DLQ_QUERY_H
#define GUST_HTTP_DLQ_QUERY_H

#include <stddef.h>
#include <stdint.h>

/* What a DLQ request asks for, parsed on the loop from the query string or the body. */
struct gust_dlq_query {
    char unit[128]; /* "" for every unit */
    uint64_t seq;   /* replay: one dead letter; 0 when not given */
    uint64_t after_seq;
    size_t limit;
    int all;
    int force; /* POST /reload?force=1 */
};

/* Reads seq, unit, all, limit and after_seq from query[0..qlen) (after the '?') and,
 * when blen > 0, from body[0..blen), a JSON object (the body wins) into q, which holds
 * the defaults. Returns NULL, or what is wrong (a literal). */
const char *gust_dlq_query_parse(const char *query, size_t qlen, const char *body, size_t blen,
                                 struct gust_dlq_query *q);

#endif
