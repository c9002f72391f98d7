/* AMQP properties and headers <-> NATS headers.
 *
 * In (amqp_in, one NATS header per item, flows see them in meta.headers):
 *   the delivery's exchange and routing key  Amqp-Exchange, Amqp-Routing-Key
 *   content_type, content_encoding           Content-Type, Content-Encoding
 *   message_id, correlation_id, reply_to,    Amqp-Message-Id, Amqp-Correlation-Id,
 *   type, app_id, user_id, expiration,       Amqp-Reply-To, Amqp-Type, Amqp-App-Id,
 *   priority, timestamp                      Amqp-User-Id, Amqp-Expiration,
 *                                            Amqp-Priority, Amqp-Timestamp (seconds)
 *   each headers-table entry of a string,    a header of its own name, the value as text
 *   number or boolean
 * Skipped: nested tables and arrays, decimals, a name that is not a header token, a
 * value with a line break, and names starting "Nats-" (JetStream acts on those:
 * Nats-Expected-Last-Sequence would fail the publish).
 *
 * Out (amqp_out): Nats-Msg-Id -> message_id; Content-Type and Content-Encoding,
 * Amqp-Correlation-Id, Amqp-Reply-To, Amqp-Type, Amqp-App-Id, Amqp-Expiration,
 * Amqp-Priority, Amqp-Timestamp back to their properties; the other headers (not
 * Nats-*, not Amqp-Message-Id, Amqp-User-Id (the broker checks it is the connection's
 * user), Amqp-Exchange or Amqp-Routing-Key) into the headers table as strings. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "amqp_plugin.h"

struct pending {
    size_t name, value; /* offsets into text */
};

static int token_ok(const char *s, size_t len)
{
    if (len == 0 || len > 128) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 32 || c >= 127 || c == ':') {
            return 0;
        }
    }
    return !(len >= 5 && strncasecmp(s, "Nats-", 5) == 0);
}

/* (An empty value passes: the host leaves it out of the NATS message.) */
static int value_ok(const char *s, size_t len)
{
    if (len > 4096 || !gust_utf8_valid(s, len)) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0') {
            return 0;
        }
    }
    return 1;
}

static void add(struct amqp_hdrs *h, struct pending *p, const char *name, size_t nlen, const char *value,
                size_t vlen)
{
    if (h->n >= AMQP_MAX_HEADERS || !token_ok(name, nlen) || !value_ok(value, vlen)) {
        return;
    }
    size_t at = h->text.len;
    if (gust_buf_append(&h->text, name, nlen) || gust_buf_append(&h->text, "", 1) ||
        gust_buf_append(&h->text, value, vlen) || gust_buf_append(&h->text, "", 1)) {
        h->text.len = at;
        return;
    }
    p[h->n].name = at;
    p[h->n].value = at + nlen + 1;
    h->n++;
}

static void add_bytes(struct amqp_hdrs *h, struct pending *p, const char *name, amqp_bytes_t b)
{
    add(h, p, name, strlen(name), b.bytes ? b.bytes : "", b.len);
}

static void add_num(struct amqp_hdrs *h, struct pending *p, const char *name, size_t nlen, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));
static void add_num(struct amqp_hdrs *h, struct pending *p, const char *name, size_t nlen, const char *fmt, ...)
{
    char v[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof(v)) {
        add(h, p, name, nlen, v, (size_t)n);
    }
}

static void add_field(struct amqp_hdrs *h, struct pending *p, const amqp_table_entry_t *e)
{
    const char *name = e->key.bytes;
    size_t nl = e->key.len;
    const amqp_field_value_t *v = &e->value;
    switch (v->kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
        add(h, p, name, nl, v->value.bytes.bytes ? v->value.bytes.bytes : "", v->value.bytes.len);
        break;
    case AMQP_FIELD_KIND_BOOLEAN:
        add(h, p, name, nl, v->value.boolean ? "true" : "false", v->value.boolean ? 4 : 5);
        break;
    case AMQP_FIELD_KIND_I8:
        add_num(h, p, name, nl, "%d", v->value.i8);
        break;
    case AMQP_FIELD_KIND_U8:
        add_num(h, p, name, nl, "%u", v->value.u8);
        break;
    case AMQP_FIELD_KIND_I16:
        add_num(h, p, name, nl, "%d", v->value.i16);
        break;
    case AMQP_FIELD_KIND_U16:
        add_num(h, p, name, nl, "%u", v->value.u16);
        break;
    case AMQP_FIELD_KIND_I32:
        add_num(h, p, name, nl, "%" PRId32, v->value.i32);
        break;
    case AMQP_FIELD_KIND_U32:
        add_num(h, p, name, nl, "%" PRIu32, v->value.u32);
        break;
    case AMQP_FIELD_KIND_I64:
        add_num(h, p, name, nl, "%" PRId64, v->value.i64);
        break;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
        add_num(h, p, name, nl, "%" PRIu64, v->value.u64);
        break;
    case AMQP_FIELD_KIND_F32:
        add_num(h, p, name, nl, "%.9g", (double)v->value.f32);
        break;
    case AMQP_FIELD_KIND_F64:
        add_num(h, p, name, nl, "%.17g", v->value.f64);
        break;
    default:
        break; /* tables, arrays, decimals, void: not one header value */
    }
}

int amqp_props_to_headers(const amqp_envelope_t *env, struct amqp_hdrs *out)
{
    const amqp_basic_properties_t *pr = &env->message.properties;
    struct pending p[AMQP_MAX_HEADERS];
    amqp_flags_t f = pr->_flags;

    out->n = 0;
    out->text.len = 0;
    add_bytes(out, p, "Amqp-Exchange", env->exchange);
    add_bytes(out, p, "Amqp-Routing-Key", env->routing_key);
    static const struct {
        amqp_flags_t flag;
        size_t off;
        const char *name;
    } strs[] = {
        {AMQP_BASIC_CONTENT_TYPE_FLAG, offsetof(amqp_basic_properties_t, content_type), "Content-Type"},
        {AMQP_BASIC_CONTENT_ENCODING_FLAG, offsetof(amqp_basic_properties_t, content_encoding), "Content-Encoding"},
        {AMQP_BASIC_MESSAGE_ID_FLAG, offsetof(amqp_basic_properties_t, message_id), "Amqp-Message-Id"},
        {AMQP_BASIC_CORRELATION_ID_FLAG, offsetof(amqp_basic_properties_t, correlation_id), "Amqp-Correlation-Id"},
        {AMQP_BASIC_REPLY_TO_FLAG, offsetof(amqp_basic_properties_t, reply_to), "Amqp-Reply-To"},
        {AMQP_BASIC_TYPE_FLAG, offsetof(amqp_basic_properties_t, type), "Amqp-Type"},
        {AMQP_BASIC_APP_ID_FLAG, offsetof(amqp_basic_properties_t, app_id), "Amqp-App-Id"},
        {AMQP_BASIC_USER_ID_FLAG, offsetof(amqp_basic_properties_t, user_id), "Amqp-User-Id"},
        {AMQP_BASIC_EXPIRATION_FLAG, offsetof(amqp_basic_properties_t, expiration), "Amqp-Expiration"},
    };
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (f & strs[i].flag) {
            add_bytes(out, p, strs[i].name, *(const amqp_bytes_t *)((const char *)pr + strs[i].off));
        }
    }
    if (f & AMQP_BASIC_PRIORITY_FLAG) {
        add_num(out, p, "Amqp-Priority", 13, "%u", pr->priority);
    }
    if (f & AMQP_BASIC_TIMESTAMP_FLAG) {
        add_num(out, p, "Amqp-Timestamp", 14, "%" PRIu64, pr->timestamp);
    }
    if (f & AMQP_BASIC_HEADERS_FLAG) {
        for (int i = 0; i < pr->headers.num_entries; i++) {
            add_field(out, p, &pr->headers.entries[i]);
        }
    }
    /* The buffer has stopped moving: point into it. */
    for (size_t i = 0; i < out->n; i++) {
        out->h[i].name = out->text.data + p[i].name;
        out->h[i].value = out->text.data + p[i].value;
    }
    return 0;
}

void amqp_hdrs_free(struct amqp_hdrs *h)
{
    gust_buf_free(&h->text);
    h->n = 0;
}

static amqp_bytes_t bytes_of(const char *s)
{
    amqp_bytes_t b = {strlen(s), (void *)s};
    return b;
}

void amqp_headers_to_props(const struct gust_msg *msg, const char *fallback_id, amqp_basic_properties_t *p,
                           amqp_table_entry_t *fields)
{
    static const struct {
        const char *name;
        amqp_flags_t flag;
        size_t off;
    } strs[] = {
        {"Content-Type", AMQP_BASIC_CONTENT_TYPE_FLAG, offsetof(amqp_basic_properties_t, content_type)},
        {"Content-Encoding", AMQP_BASIC_CONTENT_ENCODING_FLAG, offsetof(amqp_basic_properties_t, content_encoding)},
        {"Nats-Msg-Id", AMQP_BASIC_MESSAGE_ID_FLAG, offsetof(amqp_basic_properties_t, message_id)},
        {"Amqp-Correlation-Id", AMQP_BASIC_CORRELATION_ID_FLAG, offsetof(amqp_basic_properties_t, correlation_id)},
        {"Amqp-Reply-To", AMQP_BASIC_REPLY_TO_FLAG, offsetof(amqp_basic_properties_t, reply_to)},
        {"Amqp-Type", AMQP_BASIC_TYPE_FLAG, offsetof(amqp_basic_properties_t, type)},
        {"Amqp-App-Id", AMQP_BASIC_APP_ID_FLAG, offsetof(amqp_basic_properties_t, app_id)},
        {"Amqp-Expiration", AMQP_BASIC_EXPIRATION_FLAG, offsetof(amqp_basic_properties_t, expiration)},
    };
    static const char *const dropped[] = {"Amqp-Message-Id", "Amqp-User-Id", "Amqp-Exchange", "Amqp-Routing-Key"};

    memset(p, 0, sizeof(*p));
    p->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    p->delivery_mode = AMQP_DELIVERY_PERSISTENT;
    p->content_type = bytes_of("application/json");
    int nf = 0;
    for (size_t i = 0; i < msg->nheaders; i++) {
        const char *name = msg->headers[i].name, *value = msg->headers[i].value;
        if (!name || !value) {
            continue;
        }
        int done = 0;
        for (size_t j = 0; !done && j < sizeof(strs) / sizeof(strs[0]); j++) {
            if (strcasecmp(name, strs[j].name) == 0) {
                p->_flags |= strs[j].flag;
                *(amqp_bytes_t *)((char *)p + strs[j].off) = bytes_of(value);
                done = 1;
            }
        }
        if (!done && strcasecmp(name, "Amqp-Priority") == 0) {
            char *end;
            unsigned long v = strtoul(value, &end, 10);
            if (*value && !*end && v <= 255) {
                p->_flags |= AMQP_BASIC_PRIORITY_FLAG;
                p->priority = (uint8_t)v;
            }
            done = 1;
        }
        if (!done && strcasecmp(name, "Amqp-Timestamp") == 0) {
            char *end;
            unsigned long long v = strtoull(value, &end, 10);
            if (*value && !*end) {
                p->_flags |= AMQP_BASIC_TIMESTAMP_FLAG;
                p->timestamp = v;
            }
            done = 1;
        }
        for (size_t j = 0; !done && j < sizeof(dropped) / sizeof(dropped[0]); j++) {
            done = strcasecmp(name, dropped[j]) == 0;
        }
        if (done || strncasecmp(name, "Nats-", 5) == 0 || nf >= AMQP_MAX_HEADERS) {
            continue;
        }
        fields[nf].key = bytes_of(name);
        fields[nf].value.kind = AMQP_FIELD_KIND_UTF8;
        fields[nf].value.value.bytes = bytes_of(value);
        nf++;
    }
    if (!(p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) && fallback_id) {
        p->_flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        p->message_id = bytes_of(fallback_id);
    }
    if (nf > 0) {
        p->_flags |= AMQP_BASIC_HEADERS_FLAG;
        p->headers.num_entries = nf;
        p->headers.entries = fields;
    }
}
