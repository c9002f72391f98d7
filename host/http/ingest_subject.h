/* The subject POST /ingest/<suffix> publishes to. Pure: ingest.c and the fuzzer use it. */
#ifndef GUST_HTTP_INGEST_SUBJECT_H
#define GUST_HTTP_INGEST_SUBJECT_H

#include <stddef.h>

#define GUST_INGEST_SUBJECT_MAX 256

/* prefix (the stream's, "ev." of `subjects ev.>;`, or "") + suffix[0..len) with %XX
 * decoded, into out (NUL-terminated), so that an encoded space or control character is
 * judged as what it stands for. Returns 1 when the suffix is valid subject tokens (no
 * wildcards, no empty token, no spaces or control characters, no NUL) and the whole fits
 * within GUST_INGEST_SUBJECT_MAX - 1 bytes, else 0. */
int gust_ingest_subject(const char *prefix, const char *suffix, size_t len, char out[GUST_INGEST_SUBJECT_MAX]);

#endif
