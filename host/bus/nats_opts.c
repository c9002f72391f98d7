#include "nats_opts.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "gust/sdk.h"
#include "nats_url.h"
#include "nkeys.h"

#define MAX_SECRET 4096
/* A connection that drops sooner than this after it was made counts as a failed
 * attempt: the next wait doubles instead of starting over (a server that accepts and
 * closes at once must not be hammered). */
#define STABLE_MS 10000
#define MAX_LINKS 16

/* ---- reading and checking the configuration ---- */

/* nats.c's last error on this thread without the "(conn.c:733): " it starts with, or
 * NULL. */
const char *gust_nats_last_error(void)
{
    const char *t = nats_GetLastError(NULL);
    if (t != NULL && t[0] == '(') {
        const char *e = strstr(t, "): ");
        t = e != NULL ? e + 3 : t;
    }
    return t != NULL && t[0] != '\0' ? t : NULL;
}


void gust_nats_link_conf_defaults(struct gust_nats_link_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    conf->tls_verify = 1;
    conf->ping_interval_ms = 2000;
    conf->max_pings_out = 2;
    conf->reconnect_wait_ms = 250;
    conf->reconnect_max_wait_ms = 5000;
}

/* Trailing whitespace (the newline of `echo secret > file`) is not part of a secret. */
static size_t trim(const char *s, size_t len)
{
    while (len > 0 && isspace((unsigned char)s[len - 1])) {
        len--;
    }
    return len;
}

/* The secret in file (or, when file is NULL, in the variable env) into buf,
 * NUL-terminated. The caller wipes buf. Messages name where, never the content. */
static int read_secret(const char *file, const char *env, char *buf, size_t size, const char *where,
                       const char *key, struct gust_err *err)
{
    size_t len = 0;
    if (file != NULL) {
        FILE *f = fopen(file, "r");
        if (f == NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s %s: %s", where, key, file, strerror(errno));
        }
        len = fread(buf, 1, size - 1, f);
        int more = fgetc(f) != EOF;
        fclose(f);
        if (more) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s %s: longer than %zu bytes", where, key, file, size - 2);
        }
    } else {
        const char *v = getenv(env);
        if (v == NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s: variable %s is not set", where, key, env);
        }
        len = strlen(v);
        if (len >= size) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s: %s is longer than %zu bytes", where, key, env, size - 1);
        }
        memcpy(buf, v, len);
    }
    len = trim(buf, len);
    buf[len] = '\0';
    if (len == 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s %s is empty", where, key, file != NULL ? file : env);
    }
    if (memchr(buf, '\0', len) != NULL || strchr(buf, '\n') != NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s %s holds more than one line", where, key,
                            file != NULL ? file : env);
    }
    return 0;
}

static int check_readable(const struct gust_cfg *nats, const char *key, struct gust_err *err)
{
    const char *path = gust_cfg_str(nats, key);
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    if (path != NULL && f == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s %s: %s", gust_cfg_where(nats, key), key, path, strerror(errno));
    }
    if (f != NULL) {
        fclose(f);
    }
    return 0;
}

/* OpenSSL's reason for the last failure, for a message. */
static const char *ssl_reason(void)
{
    static _Thread_local char buf[160];
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return e != 0 ? buf : "unknown error";
}

static EVP_PKEY *read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *key = f != NULL ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f != NULL) {
        fclose(f);
    }
    return key;
}

/* The PEM files load as nats.c will load them: a CA that parses, a certificate with its
 * own key. */
static int check_tls_files(const struct gust_cfg *nats, const struct gust_nats_link_conf *c, struct gust_err *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    int rc = 0;
    EVP_PKEY *key = NULL;
    if (c->tls_ca != NULL && SSL_CTX_load_verify_locations(ctx, c->tls_ca, NULL) != 1) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: tls_ca %s: not a PEM CA certificate (%s)", gust_cfg_where(nats, "tls_ca"),
                          c->tls_ca, ssl_reason());
    } else if (c->tls_cert != NULL && SSL_CTX_use_certificate_chain_file(ctx, c->tls_cert) != 1) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: tls_cert %s: not a PEM certificate (%s)",
                          gust_cfg_where(nats, "tls_cert"), c->tls_cert, ssl_reason());
    } else if (c->tls_key != NULL && (key = read_key(c->tls_key)) == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: tls_key %s: not a PEM private key (%s)", gust_cfg_where(nats, "tls_key"),
                          c->tls_key, ssl_reason());
    } else if (key != NULL && (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1)) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: tls_key %s is not the key of tls_cert %s", gust_cfg_where(nats, "tls_key"),
                          c->tls_key, c->tls_cert);
    }
    EVP_PKEY_free(key);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return rc;
}

/* The URLs: one scheme for all (nats.c uses TLS for every server or none), no
 * credentials in them when a key gives some, and the name certificates must carry. */
static int check_urls(const struct gust_cfg *nats, struct gust_nats_link_conf *c, int auth_keys, struct gust_err *err)
{
    size_t n = gust_cfg_count(nats, "url");
    int tls_urls = 0, with_creds = 0, one_host = 1, ip_host = 0;
    char host[sizeof(c->tls_server_name)] = "";
    for (size_t i = 0; i < n; i++) {
        struct gust_nats_url u;
        if (gust_nats_url_parse(gust_cfg_item(nats, "url", i), &u) != NULL) {
            continue; /* reported by the syntax check with its own line */
        }
        tls_urls += u.tls;
        with_creds += u.user != NULL || u.token != NULL;
        if (i == 0) {
            snprintf(host, sizeof(host), "%s", u.host);
        } else if (strcmp(host, u.host) != 0) {
            one_host = 0;
        }
        /* An address (v4, or v6 with ':'): nats.c checks DNS names only. */
        ip_host |= strchr(u.host, ':') != NULL || strspn(u.host, "0123456789.") == strlen(u.host);
        gust_nats_url_free(&u);
    }
    const char *where = gust_cfg_where(nats, "url");
    if (tls_urls > 0 && (size_t)tls_urls < n) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: url: some URLs are tls:// and some nats://: use one scheme (TLS goes to every "
                            "server or none)",
                            where);
    }
    if (with_creds > 0 && auth_keys > 0) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: url: credentials in a URL and in creds/nkey_seed/token_file/user: give them one way",
                            where);
    }
    c->tls |= tls_urls > 0;
    if (c->tls_server_name[0] == '\0' && one_host && !ip_host && n > 0) {
        snprintf(c->tls_server_name, sizeof(c->tls_server_name), "%s", host);
    }
    return 0;
}

int gust_nats_link_conf_load(const struct gust_cfg *nats, struct gust_nats_link_conf *c, struct gust_err *err)
{
    gust_nats_link_conf_defaults(c);
    c->tls = (int)gust_cfg_int(nats, "tls");
    c->tls_ca = gust_cfg_str(nats, "tls_ca");
    c->tls_cert = gust_cfg_str(nats, "tls_cert");
    c->tls_key = gust_cfg_str(nats, "tls_key");
    c->tls_verify = (int)gust_cfg_int(nats, "tls_verify");
    const char *server_name = gust_cfg_str(nats, "tls_server_name");
    if (server_name != NULL) {
        snprintf(c->tls_server_name, sizeof(c->tls_server_name), "%s", server_name);
    }
    c->creds = gust_cfg_str(nats, "creds");
    c->nkey_seed = gust_cfg_str(nats, "nkey_seed");
    c->token_file = gust_cfg_str(nats, "token_file");
    c->user = gust_cfg_str(nats, "user");
    c->password_file = gust_cfg_str(nats, "password_file");
    c->password_env = gust_cfg_str(nats, "password_env");
    c->ping_interval_ms = gust_cfg_int(nats, "ping_interval");
    c->max_pings_out = (int)gust_cfg_int(nats, "max_pings_out");
    c->reconnect_wait_ms = gust_cfg_int(nats, "reconnect_wait");
    c->reconnect_max_wait_ms = gust_cfg_int(nats, "reconnect_max_wait");
    c->tls |= c->tls_ca != NULL || c->tls_cert != NULL;

    static const char *const security_keys[] = {"tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name",
                                                "creds", "nkey_seed", "token_file", "user", "password_file",
                                                "password_env", NULL};
    if (gust_cfg_count(nats, "url") == 0) {
        for (size_t i = 0; security_keys[i] != NULL; i++) {
            const char *k = security_keys[i];
            if (strcmp(k, "tls") == 0 ? c->tls : gust_cfg_str(nats, k) != NULL) {
                return gust_err_set(err, GUST_ECONFIG,
                                    "%s: %s needs a `url`: the embedded nats-server (no url) is plain NATS on loopback",
                                    gust_cfg_where(nats, k), k);
            }
        }
    }
    if ((c->tls_cert != NULL) != (c->tls_key != NULL)) {
        const char *k = c->tls_cert != NULL ? "tls_cert" : "tls_key";
        return gust_err_set(err, GUST_ECONFIG, "%s: %s needs %s too", gust_cfg_where(nats, k), k,
                            c->tls_cert != NULL ? "tls_key" : "tls_cert");
    }
    /* One way of authenticating. */
    static const char *const auth_keys[] = {"creds", "nkey_seed", "token_file", "user", NULL};
    const char *first = NULL;
    int nauth = 0;
    for (size_t i = 0; auth_keys[i] != NULL; i++) {
        if (gust_cfg_str(nats, auth_keys[i]) == NULL) {
            continue;
        }
        if (first != NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s and %s: give one way of authenticating",
                                gust_cfg_where(nats, auth_keys[i]), first, auth_keys[i]);
        }
        first = auth_keys[i];
        nauth++;
    }
    if (c->password_file != NULL && c->password_env != NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: password_file and password_env: give one",
                            gust_cfg_where(nats, "password_env"));
    }
    if (c->user != NULL && c->password_file == NULL && c->password_env == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: user needs password_file or password_env", gust_cfg_where(nats, "user"));
    }
    if (c->user == NULL && (c->password_file != NULL || c->password_env != NULL)) {
        const char *k = c->password_file != NULL ? "password_file" : "password_env";
        return gust_err_set(err, GUST_ECONFIG, "%s: %s needs user", gust_cfg_where(nats, k), k);
    }
    int rc = check_urls(nats, c, nauth, err);
    static const char *const files[] = {"tls_ca", "tls_cert", "tls_key", "creds", "nkey_seed", NULL};
    for (size_t i = 0; rc == 0 && files[i] != NULL; i++) {
        rc = check_readable(nats, files[i], err);
    }
    if (rc == 0 && c->tls) {
        rc = check_tls_files(nats, c, err);
    }
    struct gust_err inner;
    if (rc == 0 && c->creds != NULL && gust_creds_check(c->creds, (int64_t)time(NULL), &inner) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: %s", gust_cfg_where(nats, "creds"), inner.msg);
    }
    char pub[GUST_NKEY_PUBLIC_LEN + 1];
    if (rc == 0 && c->nkey_seed != NULL && gust_nkey_public_of_seed_file(c->nkey_seed, pub, &inner) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: %s", gust_cfg_where(nats, "nkey_seed"), inner.msg);
    }
    char secret[MAX_SECRET + 2];
    if (rc == 0 && c->token_file != NULL) {
        rc = read_secret(c->token_file, NULL, secret, sizeof(secret), gust_cfg_where(nats, "token_file"), "token_file",
                         err);
    }
    if (rc == 0 && c->user != NULL) {
        const char *k = c->password_file != NULL ? "password_file" : "password_env";
        rc = read_secret(c->password_file, c->password_env, secret, sizeof(secret), gust_cfg_where(nats, k), k, err);
    }
    OPENSSL_cleanse(secret, sizeof(secret));
    /* The schema bounds each key; this compares two of them. */
    if (rc == 0 && c->reconnect_max_wait_ms < c->reconnect_wait_ms) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: reconnect_wait must be at most reconnect_max_wait",
                          gust_cfg_where(nats, "reconnect_wait"));
    }
    return rc;
}

/* ---- reconnecting ---- */

void gust_nats_backoff_init(struct gust_nats_backoff *b, const struct gust_nats_link_conf *conf, const char *link)
{
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", link);
    b->base_ms = conf->reconnect_wait_ms;
    b->max_ms = conf->reconnect_max_wait_ms;
    b->connected_ms = gust_clock_mono_ms();
}

int64_t gust_nats_backoff_delay(struct gust_nats_backoff *b, int attempts, const char *why)
{
    int64_t now = gust_clock_mono_ms();
    if (attempts == 1) {
        /* A new outage: was the connection that just dropped up for long? */
        b->flaps = now - b->connected_ms < STABLE_MS ? b->flaps + 1 : 0;
    }
    int shift = attempts - 1 + b->flaps;
    int64_t delay = b->base_ms;
    for (int i = 0; i < shift && delay < b->max_ms; i++) {
        delay *= 2;
    }
    if (delay > b->max_ms) {
        delay = b->max_ms;
    }
    /* Up to a quarter more, so that many clients of one server do not come back at once. */
    delay += delay > 4 ? rand() % (delay / 4) : 0;
    b->connected_ms = now + delay; /* if the next attempt works, it was made about then */
    if (why != NULL && why[0] != '\0' && strcmp(why, b->last_error) != 0) {
        snprintf(b->last_error, sizeof(b->last_error), "%s", why);
        gust_warn("%s: cannot connect to the bus: %s (next attempt in %lld ms)", b->name, why, (long long)delay);
    } else if (attempts == 1 && b->flaps > 0) {
        gust_warn("%s: the bus connection dropped %d time%s within %d s of being made; next attempt in %lld ms",
                  b->name, b->flaps, b->flaps > 1 ? "s" : "", STABLE_MS / 1000, (long long)delay);
    }
    return delay;
}

void gust_nats_backoff_connected(struct gust_nats_backoff *b)
{
    b->connected_ms = gust_clock_mono_ms();
    b->last_error[0] = '\0';
}

/* nats.c's own reconnection (the bus's connections) asks for its delays here, on its
 * reconnect thread, after each round over the servers. The state is per named link, in
 * a fixed table: links live as long as the process. */
struct link_state {
    struct gust_nats_backoff backoff;
    pthread_mutex_t lock;
};

static struct link_state links[MAX_LINKS];
static int nlinks;
static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t reconnect_delay(natsConnection *nc, int attempts, void *closure)
{
    (void)nc;
    struct link_state *st = closure;
    pthread_mutex_lock(&st->lock);
    /* The reason of the attempt that failed, on this (nats.c's reconnect) thread. */
    int64_t delay = gust_nats_backoff_delay(&st->backoff, attempts, gust_nats_last_error());
    pthread_mutex_unlock(&st->lock);
    return delay;
}

static struct link_state *link_state_for(const char *link, const struct gust_nats_link_conf *conf)
{
    struct link_state *st = NULL;
    pthread_mutex_lock(&links_lock);
    for (int i = 0; i < nlinks && st == NULL; i++) {
        if (strcmp(links[i].backoff.name, link) == 0) {
            st = &links[i];
        }
    }
    if (st == NULL && nlinks < MAX_LINKS) {
        st = &links[nlinks++];
        gust_nats_backoff_init(&st->backoff, conf, link);
        pthread_mutex_init(&st->lock, NULL);
    }
    pthread_mutex_unlock(&links_lock);
    return st;
}

/* ---- filling the options ---- */

/* nats.c's reason for the last failure, for a message. */
static const char *nats_reason(natsStatus s)
{
    const char *t = gust_nats_last_error();
    return t != NULL ? t : natsStatus_GetText(s);
}

static int set_tls(natsOptions *opts, const struct gust_nats_link_conf *c, const char *link, struct gust_err *err)
{
    natsStatus s = natsOptions_SetSecure(opts, true);
    if (s != NATS_OK) {
        return gust_err_set(err, GUST_EIO, "%s: TLS: %s", link, nats_reason(s));
    }
    if (c->tls_ca != NULL && (s = natsOptions_LoadCATrustedCertificates(opts, c->tls_ca)) != NATS_OK) {
        return gust_err_set(err, GUST_ECONFIG, "%s: tls_ca %s: %s", link, c->tls_ca, nats_reason(s));
    }
    if (c->tls_cert != NULL && (s = natsOptions_LoadCertificatesChain(opts, c->tls_cert, c->tls_key)) != NATS_OK) {
        return gust_err_set(err, GUST_ECONFIG, "%s: tls_cert %s: %s", link, c->tls_cert, nats_reason(s));
    }
    if (!c->tls_verify) {
        s = natsOptions_SkipServerVerification(opts, true);
    } else if (c->tls_server_name[0] != '\0') {
        /* Without it nats.c checks the chain but not the name. */
        s = natsOptions_SetExpectedHostname(opts, c->tls_server_name);
    }
    return s == NATS_OK ? 0 : gust_err_set(err, GUST_EIO, "%s: TLS: %s", link, nats_reason(s));
}

static int set_auth(natsOptions *opts, const struct gust_nats_link_conf *c, const char *link, struct gust_err *err)
{
    natsStatus s = NATS_OK;
    char secret[MAX_SECRET + 2];
    int rc = 0;
    if (c->creds != NULL) {
        s = natsOptions_SetUserCredentialsFromFiles(opts, c->creds, NULL);
    } else if (c->nkey_seed != NULL) {
        char pub[GUST_NKEY_PUBLIC_LEN + 1];
        rc = gust_nkey_public_of_seed_file(c->nkey_seed, pub, err);
        if (rc == 0) {
            s = natsOptions_SetNKeyFromSeed(opts, pub, c->nkey_seed);
        }
    } else if (c->token_file != NULL) {
        rc = read_secret(c->token_file, NULL, secret, sizeof(secret), link, "token_file", err);
        if (rc == 0) {
            s = natsOptions_SetToken(opts, secret);
        }
    } else if (c->user != NULL) {
        rc = read_secret(c->password_file, c->password_env, secret, sizeof(secret), link,
                         c->password_file != NULL ? "password_file" : "password_env", err);
        if (rc == 0) {
            s = natsOptions_SetUserInfo(opts, c->user, secret);
        }
    }
    OPENSSL_cleanse(secret, sizeof(secret));
    if (rc == 0 && s != NATS_OK) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: credentials: %s", link, nats_reason(s));
    }
    return rc;
}

int gust_nats_opts_fill(natsOptions *opts, const struct gust_nats_link_conf *c, const char *link, struct gust_err *err)
{
    /* A write that cannot go out for as long as a silent server takes to be noticed
     * fails the connection: without a deadline nats.c writes on a blocking socket
     * holding the connection's lock, and a server that stopped reading would stall
     * every publisher and the PING timer itself. */
    int64_t keepalive_ms = c->ping_interval_ms * (c->max_pings_out + 1);
    natsStatus s = natsOptions_SetPingInterval(opts, c->ping_interval_ms);
    if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts, c->max_pings_out);
    if (s == NATS_OK) s = natsOptions_SetWriteDeadline(opts, keepalive_ms);
    struct link_state *st = link_state_for(link, c);
    if (s == NATS_OK && st != NULL) s = natsOptions_SetCustomReconnectDelay(opts, reconnect_delay, st);
    if (s == NATS_OK && st == NULL) s = natsOptions_SetReconnectWait(opts, c->reconnect_wait_ms);
    if (s != NATS_OK) {
        return gust_err_set(err, GUST_EIO, "%s: %s", link, nats_reason(s));
    }
    int rc = c->tls ? set_tls(opts, c, link, err) : 0;
    return rc != 0 ? rc : set_auth(opts, c, link, err);
}

#define PROBE_TIMEOUT_MS 1500

int gust_nats_probe(const char *const *urls, size_t n, const struct gust_nats_link_conf *c, struct gust_err *err)
{
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetServers(opts, (const char **)urls, (int)n);
    if (s == NATS_OK) s = natsOptions_SetName(opts, "gust-probe");
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
    /* Short: the start waits for it, and a SIGTERM then must not wait long. */
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, PROBE_TIMEOUT_MS);
    if (s != NATS_OK) {
        natsOptions_Destroy(opts);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    int rc = gust_nats_opts_fill(opts, c, "bus", err);
    if (rc == 0) {
        s = natsConnection_Connect(&nc, opts);
        /* Down or refusing connections: the bus retries in the background. A server
         * that takes the connection and then stays silent (or never ends its INFO line)
         * is tried again by the start instead: nats.c 3.4.1, its first attempt timed out
         * in the handshake, never tries again in the background. */
        if (s == NATS_TIMEOUT) {
            rc = gust_err_set(err, GUST_EAGAIN, "bus: no handshake with the server within %d ms", PROBE_TIMEOUT_MS);
        } else if (s != NATS_OK && s != NATS_NO_SERVER && s != NATS_IO_ERROR) {
            struct gust_nats_url u;
            int parsed = gust_nats_url_parse(urls[0], &u) == NULL;
            /* A TLS server that wants a client certificate and gets none closes the
             * connection once the handshake is over: nats.c sees no PONG. */
            const char *why = nats_reason(s);
            const char *hint = strstr(why, "PONG") == NULL ? ""
                               : c->tls && c->tls_cert == NULL
                                   ? " (the server closed the connection: does it want a client certificate, "
                                     "tls_cert and tls_key?)"
                                   : " (the server closed the connection; its log says why)";
            /* Only what another try cannot cure stops the start: credentials and TLS.
             * Anything else (a handshake garbled, +OK before PONG, an INFO cut short) is
             * a server misbehaving for now: the start tries again (GUST_EAGAIN). */
            int fatal = s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED || s == NATS_SSL_ERROR ||
                        s == NATS_SECURE_CONNECTION_WANTED || s == NATS_SECURE_CONNECTION_REQUIRED ||
                        (c->tls && strstr(why, "PONG") != NULL) || strstr(why, "uthorization") != NULL ||
                        strstr(why, "uthentication") != NULL;
            rc = gust_err_set(err, fatal ? GUST_ECONFIG : GUST_EAGAIN, "bus: %s%s: %s%s", parsed ? u.text : "?",
                              n > 1 ? ",..." : "", why, hint);
            if (parsed) {
                gust_nats_url_free(&u);
            }
        }
    }
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);
    return rc;
}
