/* Error reporting shared by every module of the host.
 *
 * Functions that can fail return 0 or a negative GUST_E* code and, when given a
 * struct gust_err, fill it with a message a user can act on (naming file:line when
 * the error is in something the user wrote). */
#ifndef GUST_COMMON_ERR_H
#define GUST_COMMON_ERR_H

#include <stdarg.h>

enum {
    GUST_OK = 0,
    GUST_EINVAL = -1,   /* bad input from the user or a caller */
    GUST_ENOMEM = -2,
    GUST_EIO = -3,      /* system or network failure */
    GUST_ECONFIG = -4,  /* host.conf, script or rule error */
    GUST_EABI = -5,     /* plugin ABI mismatch */
    GUST_ETIMEOUT = -6,
    GUST_EAGAIN = -7,   /* try again later (back-pressure, not connected) */
};

struct gust_err {
    char msg[512];
};

/* Formats into err->msg (err may be NULL) and returns code, so callers can write
 * `return gust_err_set(err, GUST_EINVAL, "...")`. Plugins get it from libgust-sdk, linked
 * statically and hidden like the rest of the plugin. */
int gust_err_set(struct gust_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int gust_err_vset(struct gust_err *err, int code, const char *fmt, va_list ap);

#endif
