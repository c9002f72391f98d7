#include "gust/err.h"

#include <stdio.h>

int gust_err_vset(struct gust_err *err, int code, const char *fmt, va_list ap)
{
    if (err != NULL) {
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    }
    return code;
}

int gust_err_set(struct gust_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gust_err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}
