/* A CSV reader (RFC 4180) for lookup tables.
 *
 * No library in the project reads CSV, and the format is small: rows end with LF or
 * CRLF; a field is either plain (no quote in it) or quoted with "...", where "" is a
 * quote and commas and line breaks are data. Anything else is an error naming the
 * line, rather than a guess: a quote inside a plain field, text after a closing quote,
 * a CR not followed by LF, a quoted field still open at the end, invalid UTF-8, a NUL. A UTF-8
 * byte order mark at the start is skipped; empty lines are skipped. */
#ifndef GUST_FLOW_CSV_H
#define GUST_FLOW_CSV_H

#include <stddef.h>

/* Called once per row: fields[i] (lens[i] bytes, NUL-terminated) for i < n, valid
 * during the call; line is where the row starts. Returns 0 to go on, or anything else
 * to stop the parse with that value (it then writes its own why). */
typedef int (*gust_csv_row_fn)(void *ud, int line, const char *const *fields, const size_t *lens, size_t n);

/* Reads text[0..len). Returns 0 after the last row, what on_row returned when it
 * stopped, GUST_EINVAL with why and *line set for malformed text, or GUST_ENOMEM. */
int gust_csv_parse(const char *text, size_t len, gust_csv_row_fn on_row, void *ud, char *why, size_t why_size,
                   int *line);

#endif
