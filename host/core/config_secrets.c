#include "config_secrets.h"

#include <stdio.h>
#include <string.h>

#include "../conf/conf_schema.h"

#define R GUST_K_RELOADABLE
#define SEC(f, T, def, flags, help) GUST_KEY(struct gust_secrets_keys, f, T, def, flags, help)
#define SEC_RANGE(f, T, def, flags, lo, hi, help) \
    GUST_KEY_RANGE(struct gust_secrets_keys, f, T, def, flags, lo, hi, help)

/* All reloadable: a reload builds the store anew (host/secret/store.c). */
const struct gust_schema_key gust_secrets_schema[] = {
    GUST_KEY_URL(struct gust_secrets_keys, vault_addr, NULL, R, "http|https",
        "Vault KV v2 store, e.g. https://vault:8200; {secret:PATH#KEY} is data.data.KEY of "
        "GET /v1/<vault_mount>/data/PATH"),
    SEC(vault_token_file, PATH, NULL, GUST_K_SECRET | R,
        "file holding the Vault token sent as X-Vault-Token (read again at each reload)"),
    SEC(vault_mount, STR, "secret", R, "the KV v2 secrets engine's mount path"),
    SEC(vault_ca, PATH, NULL, R, "CA file that signed Vault's certificate (https; default: the system store)"),
    SEC(file, PATH, NULL, R,
        "file store: a JSON object of paths to objects of keys, {\"crm/api\": {\"token\": \"...\"}}, read again at "
        "each refresh"),
    SEC(env, BOOL, "off", R,
        "on: environment store: {secret:crm/api#token} is GUST_SECRET_CRM_API_TOKEN (upper case, each other "
        "character than a letter or digit as _)"),
    SEC_RANGE(refresh, DURATION, "5m", R, 100, INT64_C(86400000),
              "every reference is fetched again this often (and at each reload); a changed value is in force for "
              "the next request, the old one zeroed"),
    SEC_RANGE(timeout, DURATION, "5s", R, 100, 60000, "one Vault request: connect, send and read the answer"),
    GUST_KEY_END,
};

struct ref_check {
    struct gust_err *err;
};

static int check_ref(void *ud, const char *ref, size_t len, const struct gust_conf_node *at)
{
    struct ref_check *rc = ud;
    const char *why = gust_secret_ref_problem(ref, len);
    if (why == NULL) {
        return 0;
    }
    return gust_err_set(rc->err, GUST_ECONFIG, "%s:%d: {secret:%.*s} %s (a reference is {secret:PATH#KEY})",
                        at->file, at->line, (int)(len > 80 ? 80 : len), ref, why);
}

int gust_config_secrets_check(struct gust_config *c, struct gust_err *err)
{
    struct ref_check chk = {.err = err};
    for (size_t i = 0; i < c->nunits; i++) {
        int rc = gust_unit_secret_refs(&c->units[i], check_ref, &chk);
        if (rc != 0) {
            return rc;
        }
    }
    const struct gust_secrets_keys *k = &c->secrets;
    int stores = (k->vault_addr != NULL) + (k->file != NULL) + (k->env != 0);
    if (stores > 1) {
        return gust_err_set(err, GUST_ECONFIG, "%s: secrets: give one store: vault_addr, file or env on",
                            gust_cfg_where(c->secrets_cfg, "vault_addr"));
    }
    if (k->vault_addr != NULL && k->vault_token_file == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: secrets: vault_addr needs vault_token_file",
                            gust_cfg_where(c->secrets_cfg, "vault_addr"));
    }
    if (k->vault_addr != NULL && strncmp(k->vault_addr, "http://", 7) != 0 &&
        strncmp(k->vault_addr, "https://", 8) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: secrets: vault_addr \"%s\" is not http://HOST:PORT or "
                            "https://HOST:PORT", gust_cfg_where(c->secrets_cfg, "vault_addr"), k->vault_addr);
    }
    return 0;
}

struct ref_walk {
    int (*fn)(void *ud, const char *ref, size_t len, const struct gust_conf_node *at);
    void *ud;
    const struct gust_conf_node *at;
};

static int one_ref(void *ud, const char *ref, size_t len)
{
    struct ref_walk *w = ud;
    return w->fn(w->ud, ref, len, w->at);
}

static int walk(const struct gust_conf_node *n, struct ref_walk *w)
{
    for (size_t i = 0; i < n->nargs; i++) {
        w->at = n;
        int rc = gust_secret_refs_each(n->args[i], one_ref, w);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < n->nchildren; i++) {
        int rc = walk(&n->children[i], w);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int gust_unit_secret_refs(const struct gust_unit_conf *u,
                          int (*fn)(void *ud, const char *ref, size_t len, const struct gust_conf_node *at), void *ud)
{
    struct ref_walk w = {.fn = fn, .ud = ud};
    return walk(u->node, &w);
}
