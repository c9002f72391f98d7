/* NATS subject validation, shared by the config check and the HTTP ingest path. */
#ifndef GUST_SUBJECT_H
#define GUST_SUBJECT_H

#include <stddef.h>

/* Returns 1 when s[0..len) (borrowed, need not be NUL-terminated) is a subject: tokens
 * of printable non-space ASCII separated by single dots, no empty token. Without
 * allow_wildcards '*' and '>' are refused anywhere; with it '*' may be a whole token and
 * '>' the whole last token (a subscription filter). Returns 0 otherwise. Runs in one pass
 * and allocates nothing: it is called for every ingested request. */
int gust_subject_valid(const char *s, size_t len, int allow_wildcards);

#endif
