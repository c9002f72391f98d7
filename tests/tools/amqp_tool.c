/* gust-amqp-tool: what the tests need of an AMQP client, on rabbitmq-c (there is no
 * Python AMQP library on the build machines).
 *
 *   gust-amqp-tool URL publish QUEUE N [START] [noid]   N messages {"id":i,"v":i*7} with
 *                                          message_id "m-<i>" (not with noid), persistent,
 *                                          to QUEUE (declared durable), confirmed
 *   gust-amqp-tool URL send EXCHANGE ROUTING_KEY BODY [prop=value | header:Name=value]...
 *                                          one message (props: message_id, correlation_id,
 *                                          content_type, type, app_id), confirmed
 *   gust-amqp-tool URL get QUEUE            every message now in QUEUE, acked, one line
 *                                          each: message_id TAB delivery_mode TAB
 *                                          content_type TAB headers (k=v;...) TAB body
 *   gust-amqp-tool URL count QUEUE          messages ready in QUEUE
 *   gust-amqp-tool URL declare QUEUE durable|transient|delete
 * Exits 1 with the broker's error on stderr. */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static amqp_connection_state_t conn;

static void die_reply(amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        return;
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *c = r.reply.decoded;
        fprintf(stderr, "%s: %.*s\n", what, (int)c->reply_text.len, (char *)c->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_t *c = r.reply.decoded;
        fprintf(stderr, "%s: %.*s\n", what, (int)c->reply_text.len, (char *)c->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        fprintf(stderr, "%s: %s\n", what, amqp_error_string2(r.library_error));
    } else {
        fprintf(stderr, "%s: failed\n", what);
    }
    exit(1);
}

static void connect_to(char *url)
{
    struct amqp_connection_info ci;
    struct timeval tv = {10, 0};
    amqp_default_connection_info(&ci);
    if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK) {
        fprintf(stderr, "bad url\n");
        exit(2);
    }
    conn = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(conn);
    int rc = amqp_socket_open_noblock(s, ci.host, ci.port, &tv);
    if (rc != AMQP_STATUS_OK) {
        fprintf(stderr, "connect: %s\n", amqp_error_string2(rc));
        exit(1);
    }
    amqp_set_rpc_timeout(conn, &tv);
    die_reply(amqp_login(conn, ci.vhost, 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
              "login");
    amqp_channel_open(conn, 1);
    die_reply(amqp_get_rpc_reply(conn), "channel.open");
}

/* Waits until every publish up to `last` is confirmed; a nack or a return fails. */
static uint64_t acked; /* confirmed so far on channel 1 */

static void wait_confirms(uint64_t last)
{
    while (acked < last) {
        amqp_frame_t f;
        struct timeval tv = {30, 0};
        int rc = amqp_simple_wait_frame_noblock(conn, &f, &tv);
        if (rc != AMQP_STATUS_OK) {
            fprintf(stderr, "confirms: %s\n", amqp_error_string2(rc));
            exit(1);
        }
        if (f.frame_type != AMQP_FRAME_METHOD) {
            continue;
        }
        if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
            amqp_basic_ack_t *a = f.payload.method.decoded;
            acked = a->delivery_tag > acked ? a->delivery_tag : acked;
        } else if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
            amqp_channel_close_t *c = f.payload.method.decoded;
            fprintf(stderr, "publish: %.*s\n", (int)c->reply_text.len, (char *)c->reply_text.bytes);
            exit(1);
        } else {
            fprintf(stderr, "publish: unexpected method 0x%08x (nack or return)\n", (unsigned)f.payload.method.id);
            exit(1);
        }
    }
}

static void declare(const char *q, int durable, int passive, uint32_t *count)
{
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(conn, 1, amqp_cstring_bytes(q), passive, durable, 0, 0,
                                                     amqp_empty_table);
    if (!ok) {
        die_reply(amqp_get_rpc_reply(conn), "queue.declare");
    }
    if (count) {
        *count = ok->message_count;
    }
}

static void publish(const char *q, long n, long start, int with_id)
{
    char body[128], id[64];
    uint64_t seq = 0;
    declare(q, 1, 0, NULL);
    amqp_confirm_select(conn, 1);
    die_reply(amqp_get_rpc_reply(conn), "confirm.select");
    for (long i = start; i < start + n; i++) {
        amqp_basic_properties_t p = {0};
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
        p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
        p.content_type = amqp_cstring_bytes("application/json");
        if (with_id) {
            snprintf(id, sizeof(id), "m-%ld", i);
            p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
            p.message_id = amqp_cstring_bytes(id);
        }
        snprintf(body, sizeof(body), "{\"id\":%ld,\"v\":%ld}", i, i * 7);
        int rc = amqp_basic_publish(conn, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(q), 1, 0, &p,
                                    amqp_cstring_bytes(body));
        if (rc != AMQP_STATUS_OK) {
            fprintf(stderr, "publish: %s\n", amqp_error_string2(rc));
            exit(1);
        }
        seq++;
        if (seq % 500 == 0) {
            wait_confirms(seq);
        }
    }
    wait_confirms(seq);
}

static void send_one(const char *ex, const char *rk, const char *body, int argc, char **argv)
{
    amqp_basic_properties_t p = {0};
    amqp_table_entry_t fields[16];
    int nf = 0;
    p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
    p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "%s: not prop=value\n", argv[i]);
            exit(2);
        }
        *eq = '\0';
        amqp_bytes_t v = amqp_cstring_bytes(eq + 1);
        if (strncmp(argv[i], "header:", 7) == 0 && nf < 16) {
            fields[nf].key = amqp_cstring_bytes(argv[i] + 7);
            fields[nf].value.kind = AMQP_FIELD_KIND_UTF8;
            fields[nf].value.value.bytes = v;
            nf++;
        } else if (strcmp(argv[i], "message_id") == 0) {
            p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
            p.message_id = v;
        } else if (strcmp(argv[i], "correlation_id") == 0) {
            p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
            p.correlation_id = v;
        } else if (strcmp(argv[i], "content_type") == 0) {
            p._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
            p.content_type = v;
        } else if (strcmp(argv[i], "type") == 0) {
            p._flags |= AMQP_BASIC_TYPE_FLAG;
            p.type = v;
        } else if (strcmp(argv[i], "app_id") == 0) {
            p._flags |= AMQP_BASIC_APP_ID_FLAG;
            p.app_id = v;
        } else {
            fprintf(stderr, "%s: unknown property\n", argv[i]);
            exit(2);
        }
    }
    if (nf) {
        p._flags |= AMQP_BASIC_HEADERS_FLAG;
        p.headers.num_entries = nf;
        p.headers.entries = fields;
    }
    amqp_confirm_select(conn, 1);
    die_reply(amqp_get_rpc_reply(conn), "confirm.select");
    int rc = amqp_basic_publish(conn, 1, amqp_cstring_bytes(ex), amqp_cstring_bytes(rk), 0, 0, &p,
                                amqp_cstring_bytes(body));
    if (rc != AMQP_STATUS_OK) {
        fprintf(stderr, "publish: %s\n", amqp_error_string2(rc));
        exit(1);
    }
    wait_confirms(1);
}

static void print_bytes(amqp_bytes_t b)
{
    fwrite(b.bytes, 1, b.len, stdout);
}

static void get_all(const char *q)
{
    for (;;) {
        amqp_rpc_reply_t r = amqp_basic_get(conn, 1, amqp_cstring_bytes(q), 0);
        die_reply(r, "basic.get");
        if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
            break;
        }
        amqp_basic_get_ok_t *ok = r.reply.decoded;
        uint64_t tag = ok->delivery_tag;
        amqp_message_t m;
        die_reply(amqp_read_message(conn, 1, &m, 0), "read");
        amqp_basic_properties_t *p = &m.properties;
        if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
            print_bytes(p->message_id);
        }
        printf("\t%d\t", (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG) ? p->delivery_mode : 0);
        if (p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) {
            print_bytes(p->content_type);
        }
        putchar('\t');
        for (int i = 0; (p->_flags & AMQP_BASIC_HEADERS_FLAG) && i < p->headers.num_entries; i++) {
            amqp_table_entry_t *e = &p->headers.entries[i];
            print_bytes(e->key);
            putchar('=');
            if (e->value.kind == AMQP_FIELD_KIND_UTF8 || e->value.kind == AMQP_FIELD_KIND_BYTES) {
                print_bytes(e->value.value.bytes);
            }
            putchar(';');
        }
        putchar('\t');
        print_bytes(m.body);
        putchar('\n');
        amqp_destroy_message(&m);
        amqp_basic_ack(conn, 1, tag, 0);
        amqp_maybe_release_buffers(conn);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gust-amqp-tool URL publish|send|get|count|declare ...\n");
        return 2;
    }
    connect_to(argv[1]);
    const char *cmd = argv[2];
    if (strcmp(cmd, "publish") == 0 && argc >= 5) {
        publish(argv[3], atol(argv[4]), argc >= 6 ? atol(argv[5]) : 0, !(argc >= 7 && strcmp(argv[6], "noid") == 0));
    } else if (strcmp(cmd, "send") == 0 && argc >= 6) {
        send_one(argv[3], argv[4], argv[5], argc - 6, argv + 6);
    } else if (strcmp(cmd, "get") == 0) {
        get_all(argv[3]);
    } else if (strcmp(cmd, "count") == 0) {
        uint32_t n = 0;
        declare(argv[3], 0, 1, &n);
        printf("%u\n", n);
    } else if (strcmp(cmd, "declare") == 0 && argc >= 5) {
        if (strcmp(argv[4], "delete") == 0) {
            amqp_queue_delete(conn, 1, amqp_cstring_bytes(argv[3]), 0, 0);
            die_reply(amqp_get_rpc_reply(conn), "queue.delete");
        } else {
            declare(argv[3], strcmp(argv[4], "durable") == 0, 0, NULL);
        }
    } else {
        fprintf(stderr, "unknown command or missing arguments\n");
        return 2;
    }
    fflush(stdout);
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    return 0;
}
