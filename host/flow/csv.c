#include "csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/json_out.h"
#include "gust/err.h"

struct row {
    struct gust_buf bytes; /* the fields' bytes, each followed by a NUL */
    size_t *ends;          /* where each field's NUL is */
    size_t n, cap;
    const char **fields;
    size_t *lens;
};

static int end_field(struct row *r)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        size_t *ends = realloc(r->ends, cap * sizeof(*ends));
        if (ends == NULL) {
            return GUST_ENOMEM;
        }
        r->ends = ends;
        r->cap = cap;
    }
    if (gust_buf_append(&r->bytes, "", 1) != 0) {
        return GUST_ENOMEM;
    }
    r->ends[r->n++] = r->bytes.len - 1;
    return 0;
}

/* Hands the row to on_row, its fields checked for UTF-8. */
static int end_row(struct row *r, int line, gust_csv_row_fn on_row, void *ud, char *why, size_t why_size)
{
    const char **fields = realloc(r->fields, r->n * sizeof(*fields));
    size_t *lens = fields != NULL ? realloc(r->lens, r->n * sizeof(*lens)) : NULL;
    if (fields != NULL) {
        r->fields = fields;
    }
    if (lens == NULL) {
        return GUST_ENOMEM;
    }
    r->lens = lens;
    size_t start = 0;
    for (size_t i = 0; i < r->n; i++) {
        fields[i] = r->bytes.data + start;
        lens[i] = r->ends[i] - start;
        if (!gust_utf8_valid(fields[i], lens[i])) {
            snprintf(why, why_size, "field %zu is not valid UTF-8", i + 1);
            return GUST_EINVAL;
        }
        if (memchr(fields[i], '\0', lens[i]) != NULL) {
            snprintf(why, why_size, "field %zu holds a NUL byte (not a text file?)", i + 1);
            return GUST_EINVAL;
        }
        start = r->ends[i] + 1;
    }
    int rc = on_row(ud, line, fields, lens, r->n);
    r->bytes.len = 0;
    r->n = 0;
    return rc;
}

int gust_csv_parse(const char *text, size_t len, gust_csv_row_fn on_row, void *ud, char *why, size_t why_size,
                   int *line)
{
    struct row r = {0};
    size_t i = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    int at = 1, rc = 0;
    *line = 1;
    while (i < len && rc == 0) {
        /* One row, from its first byte. */
        *line = at;
        if (text[i] == '\n' || (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')) {
            i += text[i] == '\r' ? 2 : 1; /* an empty line */
            at++;
            continue;
        }
        for (;;) { /* one field */
            if (i < len && text[i] == '"') {
                int open_line = at;
                i++;
                for (;;) {
                    if (i >= len) {
                        *line = open_line;
                        snprintf(why, why_size, "a quoted field is not closed");
                        rc = GUST_EINVAL;
                        goto done;
                    }
                    if (text[i] == '"') {
                        if (i + 1 < len && text[i + 1] == '"') {
                            rc = gust_buf_append(&r.bytes, "\"", 1);
                            i += 2;
                            continue;
                        }
                        i++;
                        break;
                    }
                    at += text[i] == '\n';
                    rc = gust_buf_append(&r.bytes, &text[i++], 1);
                    if (rc != 0) {
                        goto done;
                    }
                }
                if (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                    *line = at;
                    snprintf(why, why_size,
                             "text after a closing quote (a quote inside a field is written \"\")");
                    rc = GUST_EINVAL;
                    goto done;
                }
            } else {
                size_t from = i;
                while (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                    if (text[i] == '"') {
                        *line = at;
                        snprintf(why, why_size,
                                 "a quote inside a field that does not start with one "
                                 "(quote the whole field and write the quote as \"\")");
                        rc = GUST_EINVAL;
                        goto done;
                    }
                    i++;
                }
                rc = gust_buf_append(&r.bytes, text + from, i - from);
            }
            if (rc != 0 || (rc = end_field(&r)) != 0) {
                goto done;
            }
            if (i < len && text[i] == ',') {
                i++;
                continue;
            }
            break;
        }
        if (i < len && text[i] == '\r') {
            if (i + 1 >= len || text[i + 1] != '\n') {
                *line = at;
                snprintf(why, why_size, "a CR that is not followed by LF");
                rc = GUST_EINVAL;
                goto done;
            }
            i++;
        }
        if (i < len) { /* the LF */
            i++;
        }
        rc = end_row(&r, *line, on_row, ud, why, why_size);
        at++;
    }
done:
    if (rc == GUST_ENOMEM) {
        snprintf(why, why_size, "out of memory");
    }
    gust_buf_free(&r.bytes);
    free(r.ends);
    free(r.fields);
    free(r.lens);
    return rc;
}
