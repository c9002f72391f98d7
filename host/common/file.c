#include "file.h"

#include <errno.h>
#include <stdio.h>

int gust_file_read(const char *path, struct gust_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return GUST_EIO;
    }
    char chunk[65536];
    size_t got;
    int rc = 0;
    while (rc == 0 && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        rc = gust_buf_append(out, chunk, got);
    }
    if (rc == 0 && ferror(f)) {
        rc = GUST_EIO;
    }
    int saved = errno;
    fclose(f);
    errno = saved;
    return rc;
}
