/* http_out's templates: placeholder until the SDK's template engine is merged. */
#include <string.h>

#include "http_out.h"

int http_out_tpl_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err)
{
    int templated = strchr(conf->k.url, '{') || strchr(conf->k.method, '{') || conf->k.rate_key != NULL;
    for (size_t i = 0; i < conf->nhdr; i++) {
        templated |= strchr(conf->hdr_value[i], '{') != NULL;
    }
    conf->tpl = NULL;
    if (templated) {
        return gust_err_set(err, GUST_ECONFIG, "%s: templates are not supported yet", api->cfg_where(cfg, "url"));
    }
    return 0;
}

void http_out_tpl_free(struct http_out_tpl *t)
{
    (void)t;
}

int http_out_tpl_render(const struct http_out_conf *conf, const struct gust_msg *m, struct gust_buf *out,
                        size_t *head_len, size_t *key_len, char *why, size_t whysz)
{
    (void)conf;
    (void)m;
    (void)out;
    *head_len = *key_len = 0;
    why[0] = whysz ? '\0' : why[0];
    return 0;
}
