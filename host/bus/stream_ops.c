/* The JetStream API is used through plain requests, "$JS.API.STREAM.<op>.<stream>":
 * MSG.GET with next_by_subj walks a stream by subject without a consumer (skipping
 * deleted messages), and PURGE answers how many messages it removed; nats.c 3.4's
 * helpers offer neither. */
#include "stream_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../common/buf.h"
#include "../common/json_out.h"
#include "bus_int.h"

#define API_WAIT_MS 5000

void gust_stored_free(struct gust_stored *m)
{
    free(m->data);
    m->data = NULL;
}

/* One API call; on success *out is the parsed answer (free with yajl_tree_free). */
static int api(struct gust_bus *bus, const char *op, const char *stream, const char *body, yajl_val *out,
               char *why, size_t why_size)
{
    *out = NULL;
    if (!gust_bus_connected(bus)) {
        snprintf(why, why_size, "bus not connected");
        return GUST_EAGAIN;
    }
    char subject[300];
    snprintf(subject, sizeof(subject), "$JS.API.STREAM.%s.%s", op, stream);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, gust_bus__conn_now(bus), subject, body, API_WAIT_MS);
    if (s != NATS_OK) {
        snprintf(why, why_size, "jetstream: %s", natsStatus_GetText(s));
        return GUST_EAGAIN;
    }
    size_t len = (size_t)natsMsg_GetDataLength(reply);
    char *text = malloc(len + 1); /* yajl's tree parser wants a NUL-terminated buffer */
    if (text == NULL) {
        natsMsg_Destroy(reply);
        snprintf(why, why_size, "out of memory");
        return GUST_ENOMEM;
    }
    memcpy(text, natsMsg_GetData(reply), len);
    text[len] = '\0';
    natsMsg_Destroy(reply);
    char perr[128];
    yajl_val v = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    if (v == NULL || !YAJL_IS_OBJECT(v)) {
        yajl_tree_free(v);
        snprintf(why, why_size, "jetstream answered something that is not a JSON object");
        return GUST_EIO;
    }
    const char *code_path[] = {"error", "code", NULL};
    const char *desc_path[] = {"error", "description", NULL};
    yajl_val code = yajl_tree_get(v, code_path, yajl_t_number);
    if (code != NULL) {
        yajl_val desc = yajl_tree_get(v, desc_path, yajl_t_string);
        int c = (int)YAJL_GET_INTEGER(code);
        snprintf(why, why_size, "jetstream: %s", desc != NULL ? YAJL_GET_STRING(desc) : "error");
        yajl_tree_free(v);
        return c == 404 ? GUST_ENOTFOUND : GUST_EIO;
    }
    *out = v;
    return 0;
}

static const char *str_at(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val s = yajl_tree_get(v, path, yajl_t_string);
    return s != NULL ? YAJL_GET_STRING(s) : NULL;
}

static int get_msg(struct gust_bus *bus, const char *stream, const char *request, struct gust_stored *out,
                   char *why, size_t why_size)
{
    yajl_val v = NULL;
    memset(out, 0, sizeof(*out));
    int rc = api(bus, "MSG.GET", stream, request, &v, why, why_size);
    if (rc != 0) {
        return rc;
    }
    const char *seq_path[] = {"message", "seq", NULL};
    const char *msg_path[] = {"message", NULL};
    yajl_val m = yajl_tree_get(v, msg_path, yajl_t_object);
    yajl_val s = yajl_tree_get(v, seq_path, yajl_t_number);
    const char *subject = m != NULL ? str_at(m, "subject") : NULL;
    const char *data = m != NULL ? str_at(m, "data") : NULL;
    const char *time = m != NULL ? str_at(m, "time") : NULL;
    if (s == NULL || subject == NULL) {
        yajl_tree_free(v);
        snprintf(why, why_size, "jetstream answered a message without seq or subject");
        return GUST_EIO;
    }
    out->seq = (uint64_t)YAJL_GET_INTEGER(s);
    snprintf(out->subject, sizeof(out->subject), "%s", subject);
    snprintf(out->time, sizeof(out->time), "%s", time != NULL ? time : "");
    out->data = gust_base64_decode(data != NULL ? data : "", data != NULL ? strlen(data) : 0, &out->len);
    yajl_tree_free(v);
    if (out->data == NULL) {
        snprintf(why, why_size, "jetstream answered a message with bad base64 data");
        return GUST_EIO;
    }
    return 0;
}

int gust_stream_get(struct gust_bus *bus, const char *stream, uint64_t seq, const char *filter,
                    struct gust_stored *out, char *why, size_t why_size)
{
    struct gust_buf req = {0};
    gust_buf_printf(&req, "{\"seq\":%" PRIu64, seq);
    if (filter != NULL) {
        gust_buf_append(&req, ",\"next_by_subj\":", 16);
        gust_json_append_string(&req, filter, strlen(filter));
    }
    gust_buf_append(&req, "}", 2); /* with the NUL */
    int rc = req.data != NULL ? get_msg(bus, stream, req.data, out, why, why_size) : GUST_ENOMEM;
    gust_buf_free(&req);
    return rc;
}

int gust_stream_last(struct gust_bus *bus, const char *stream, const char *subject, struct gust_stored *out,
                     char *why, size_t why_size)
{
    struct gust_buf req = {0};
    gust_buf_append(&req, "{\"last_by_subj\":", 16);
    gust_json_append_string(&req, subject, strlen(subject));
    gust_buf_append(&req, "}", 2);
    int rc = req.data != NULL ? get_msg(bus, stream, req.data, out, why, why_size) : GUST_ENOMEM;
    gust_buf_free(&req);
    return rc;
}

int gust_stream_state(struct gust_bus *bus, const char *stream, uint64_t *last_seq, uint64_t *msgs, char *why,
                      size_t why_size)
{
    yajl_val v = NULL;
    int rc = api(bus, "INFO", stream, "", &v, why, why_size);
    if (rc != 0) {
        return rc;
    }
    const char *last_path[] = {"state", "last_seq", NULL};
    const char *msgs_path[] = {"state", "messages", NULL};
    yajl_val l = yajl_tree_get(v, last_path, yajl_t_number), m = yajl_tree_get(v, msgs_path, yajl_t_number);
    *last_seq = l != NULL ? (uint64_t)YAJL_GET_INTEGER(l) : 0;
    *msgs = m != NULL ? (uint64_t)YAJL_GET_INTEGER(m) : 0;
    yajl_tree_free(v);
    return 0;
}

int gust_stream_delete(struct gust_bus *bus, const char *stream, uint64_t seq, char *why, size_t why_size)
{
    char req[64];
    snprintf(req, sizeof(req), "{\"seq\":%" PRIu64 "}", seq);
    yajl_val v = NULL;
    int rc = api(bus, "MSG.DELETE", stream, req, &v, why, why_size);
    yajl_tree_free(v);
    return rc;
}

int gust_stream_purge(struct gust_bus *bus, const char *stream, const char *filter, uint64_t below,
                      uint64_t *purged, char *why, size_t why_size)
{
    struct gust_buf req = {0};
    gust_buf_append(&req, "{\"filter\":", 10);
    gust_json_append_string(&req, filter, strlen(filter));
    if (below > 0) {
        gust_buf_printf(&req, ",\"seq\":%" PRIu64, below);
    }
    gust_buf_append(&req, "}", 2);
    yajl_val v = NULL;
    int rc = req.data != NULL ? api(bus, "PURGE", stream, req.data, &v, why, why_size) : GUST_ENOMEM;
    gust_buf_free(&req);
    if (rc == 0 && purged != NULL) {
        const char *path[] = {"purged", NULL};
        yajl_val n = yajl_tree_get(v, path, yajl_t_number);
        *purged = n != NULL ? (uint64_t)YAJL_GET_INTEGER(n) : 0;
    }
    yajl_tree_free(v);
    return rc;
}
