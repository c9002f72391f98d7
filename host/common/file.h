/* Whole files into memory. */
#ifndef GUST_COMMON_FILE_H
#define GUST_COMMON_FILE_H

#include "gust/sdk.h"

/* Appends the contents of path to out. Returns 0, GUST_EIO (errno says why) or
 * GUST_ENOMEM; out keeps what it had read. */
int gust_file_read(const char *path, struct gust_buf *out);

#endif
