/* Logging to stderr: one line per event, with a level and a timestamp. Under systemd
 * (stderr is the journal) the line starts with a <N> priority and has no timestamp, as
 * journald stamps it; `log_format json` makes each line a JSON object
 * {"time","level","msg"} for log shippers. */
#ifndef GUST_COMMON_LOG_H
#define GUST_COMMON_LOG_H

#include <stddef.h>

#include "gust/api.h" /* enum gust_log_level */

/* Messages above this level are dropped (default GUST_LOG_INFO). */
void gust_log_set_level(int level);
/* 1: JSON lines (log_format json); 0: text. */
void gust_log_set_json(int on);
int gust_log_enabled(int level);
/* in (NUL-terminated, borrowed) into out, NUL-terminated, cut to fit size (at least 6):
 * control characters (C0, DEL, C1) and bytes that are not UTF-8 become the escapes \n,
 * \r, \t or \xNN, so that the result is one printable line. Returns its length.
 * Every message goes through it. */
size_t gust_log_escape(const char *in, char *out, size_t size);
void gust_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gust_error(...) gust_log(GUST_LOG_ERROR, __VA_ARGS__)
#define gust_warn(...) gust_log(GUST_LOG_WARN, __VA_ARGS__)
#define gust_info(...) gust_log(GUST_LOG_INFO, __VA_ARGS__)
#define gust_debug(...) gust_log(GUST_LOG_DEBUG, __VA_ARGS__)

#endif
