#include "bus_conf.h"

struct gust_bus_conf gust_config_bus_conf(const struct gust_config *c)
{
    const struct gust_nats_keys *nk = &c->nats;
    return (struct gust_bus_conf){
        .urls = nk->url.items,
        .nurls = nk->url.n,
        .server_bin = nk->server_bin,
        .state_dir = c->top.state_dir,
        .stream = nk->stream,
        .subjects = nk->subjects,
        .dlq_stream = nk->dlq_stream,
        .dlq_subjects = nk->dlq_subjects,
        .dlq_max_msgs = nk->dlq_max_msgs,
        .dlq_max_bytes = nk->dlq_max_bytes,
        .max_bytes = nk->max_bytes,
        .max_age_ms = nk->max_age,
        .keep_ms = nk->keep,
        .state_stream = nk->state_stream,
        .state_subjects = nk->state_subjects,
        .lease_bucket = nk->lease_bucket,
        .flow_state_bucket = nk->state_bucket,
        .duplicate_window_ms = nk->duplicate_window,
        .publish_timeout_ms = nk->publish_timeout,
        .max_pending = (size_t)nk->max_pending,
        .send_asap = nk->send_asap,
        .replicas = (int)nk->replicas,
    };
}
