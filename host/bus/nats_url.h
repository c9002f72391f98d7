/* The NATS URLs of `nats { url ...; }`: [nats://|tls://][user:pass@|token@]host[:port].
 * Checked with the configuration (gust -t), and taken apart for the log (without the
 * credentials) and for the name a server's certificate must carry. */
#ifndef GUST_BUS_NATS_URL_H
#define GUST_BUS_NATS_URL_H

struct gust_nats_url {
    char *host, *port;         /* port "4222" when the URL has none */
    char *user, *pass, *token; /* NULL when absent */
    char *text;                /* for the log: nats://host:port, without the credentials */
    int tls;                   /* tls:// */
};

/* NULL when url is usable (and u, when given, filled: free it with gust_nats_url_free),
 * else what is wrong with it. */
const char *gust_nats_url_parse(const char *url, struct gust_nats_url *u);
void gust_nats_url_free(struct gust_nats_url *u);

#endif
