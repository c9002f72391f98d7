/* The host's API table, and plugin instances. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bus/bus.h"
#include "../common/log.h"
#include "../conf/conf_schema.h"
#include "../unit/edge.h"
#include "instance.h"
#include "loader.h"

static void api_log(const struct gust_instance *inst, int level, const char *fmt, ...)
{
    if (!gust_log_enabled(level)) {
        return;
    }
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gust_log(level, "[%s] %s", inst != NULL ? inst->name : "plugin", msg);
}

static const char *api_instance_name(const struct gust_instance *inst)
{
    return inst->name;
}

static void ignore_outcome(void *ud, int status, uint64_t seq, const char *error)
{
    (void)ud;
    (void)status;
    (void)seq;
    (void)error;
}

/* A publish sent: its subject is one the source's arrows on the console go to. */
static int tallied(struct gust_instance *inst, const char *subject, int rc)
{
    if (rc == 0) {
        gust_tally_add(&inst->published, subject, 1);
    }
    return rc;
}

static int api_publish(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                       gust_publish_done_fn done, void *ud)
{
    if (inst != NULL && inst->edges != NULL) {
        return tallied(inst, subject, gust_edge_set_publish(inst->edges, subject, data, len, done, ud));
    }
    if (inst == NULL || inst->bus == NULL) {
        return GUST_EINVAL;
    }
    /* Counted per instance until the outcome is delivered: see gust_instance_dispose. */
    return tallied(inst, subject,
                   gust_bus_publish(inst->bus, subject, data, len, done != NULL ? done : ignore_outcome, ud,
                                    &inst->inflight));
}

static int api_publish_msg(struct gust_instance *inst, const struct gust_pub_msg *m,
                           gust_publish_done_fn done, void *ud)
{
    if (inst != NULL && inst->edges != NULL) {
        return tallied(inst, m->subject, gust_edge_set_publish(inst->edges, m->subject, m->data, m->len, done, ud));
    }
    if (inst == NULL || inst->bus == NULL) {
        return GUST_EINVAL;
    }
    struct gust_pub p = {.subject = m->subject,
                         .data = m->data,
                         .len = m->len,
                         .msg_id = m->msg_id,
                         .headers = m->headers,
                         .nheaders = m->nheaders};
    return tallied(inst, m->subject,
                   gust_bus_publish_msg(inst->bus, &p, done != NULL ? done : ignore_outcome, ud, &inst->inflight));
}

static void api_set_error(struct gust_instance *inst, const char *text)
{
    gust_plugin_note_set(&inst->note, text);
}

static const struct gust_host_api host_api = {
    .struct_size = sizeof(struct gust_host_api),
    .abi_major = GUST_ABI_MAJOR,
    .abi_minor = GUST_ABI_MINOR,
    .log = api_log,
    .instance_name = api_instance_name,
    .cfg_str = gust_cfg_str,
    .cfg_int = gust_cfg_int,
    .cfg_count = gust_cfg_count,
    .cfg_item = gust_cfg_item,
    .cfg_where = gust_cfg_where,
    .publish = api_publish,
    .cfg_bind = gust_cfg_bind,
    .publish_msg = api_publish_msg,
    .set_error = api_set_error,
};

const struct gust_host_api *gust_host_api(void)
{
    return &host_api;
}

int gust_instance_create(struct gust_instance *inst, const char *kind, const char *name,
                         const struct gust_plugin_type *type, const struct gust_cfg *cfg,
                         struct gust_bus *bus, struct gust_err *err)
{
    memset(inst, 0, sizeof(*inst));
    snprintf(inst->name, sizeof(inst->name), "%s:%s", kind, name);
    inst->type = type;
    inst->cfg = cfg;
    inst->bus = bus;
    gust_plugin_note_init(&inst->note);
    gust_tally_init(&inst->published);
    struct gust_err perr = {{0}};
    int rc = type->create(inst, cfg, &inst->ctx, &perr);
    if (rc != 0) {
        inst->type = NULL;
        gust_plugin_note_destroy(&inst->note);
        gust_tally_destroy(&inst->published);
        return gust_err_set(err, rc < 0 ? rc : GUST_EINVAL, "%s (%s): %s", inst->name, type->name,
                            perr.msg[0] ? perr.msg : "create failed");
    }
    return 0;
}

int gust_instance_start(struct gust_instance *inst, struct gust_err *err)
{
    if (inst->type->start != NULL) {
        struct gust_err perr = {{0}};
        int rc = inst->type->start(inst->ctx, &perr);
        if (rc != 0) {
            return gust_err_set(err, rc < 0 ? rc : GUST_EIO, "%s: start failed: %s", inst->name,
                                perr.msg[0] ? perr.msg : "no reason given");
        }
    }
    inst->started = 1;
    return 0;
}

void gust_instance_dispose(struct gust_instance *inst)
{
    if (inst->type == NULL) {
        return;
    }
    if (inst->started && inst->type->stop != NULL) {
        inst->type->stop(inst->ctx);
    }
    /* Stopped, it publishes nothing more; what it published is answered or expired by
     * the bus within publish_timeout. Only then may its plugin go: no callback into it
     * can come after. */
    while (atomic_load(&inst->inflight) > 0) {
        usleep(1000);
    }
    inst->type->destroy(inst->ctx);
    gust_cfg_destroy_wiped(inst->own_cfg);
    inst->own_cfg = NULL;
    gust_plugin_note_destroy(&inst->note);
    inst->type = NULL;
    gust_tally_destroy(&inst->published);
    free(inst->msg_scratch);
    free(inst->result_scratch);
    inst->msg_scratch = inst->result_scratch = NULL;
    inst->msg_scratch_cap = inst->result_scratch_cap = 0;
}

int gust_instance_deliver(struct gust_instance *inst, const struct gust_msg *msgs, size_t n,
                          struct gust_result *results)
{
    const struct gust_ptype *pt = gust_ptype_of(inst->type);
    if (pt->msg_size == sizeof(struct gust_msg) && pt->result_size == sizeof(struct gust_result)) {
        return inst->type->deliver(inst->ctx, msgs, n, results);
    }
    /* A plugin built with other element sizes (an older minor): lay the arrays out as it
     * reads them, each element cut to, or zero-padded to, its size. */
    size_t need_m = n * pt->msg_size, need_r = n * pt->result_size;
    if (need_m > inst->msg_scratch_cap || need_r > inst->result_scratch_cap) {
        char *m = realloc(inst->msg_scratch, need_m > 0 ? need_m : 1);
        if (m == NULL) {
            return GUST_ENOMEM;
        }
        inst->msg_scratch = m;
        inst->msg_scratch_cap = need_m;
        char *r = realloc(inst->result_scratch, need_r > 0 ? need_r : 1);
        if (r == NULL) {
            return GUST_ENOMEM;
        }
        inst->result_scratch = r;
        inst->result_scratch_cap = need_r;
    }
    size_t take_m = pt->msg_size < sizeof(struct gust_msg) ? pt->msg_size : sizeof(struct gust_msg);
    size_t take_r =
        pt->result_size < sizeof(struct gust_result) ? pt->result_size : sizeof(struct gust_result);
    memset(inst->msg_scratch, 0, need_m);
    memset(inst->result_scratch, 0, need_r);
    for (size_t i = 0; i < n; i++) {
        memcpy(inst->msg_scratch + i * pt->msg_size, &msgs[i], take_m);
        memcpy(inst->result_scratch + i * pt->result_size, &results[i], take_r);
    }
    int rc = inst->type->deliver(inst->ctx, (const struct gust_msg *)(void *)inst->msg_scratch, n,
                                 (struct gust_result *)(void *)inst->result_scratch);
    for (size_t i = 0; i < n; i++) {
        memcpy(&results[i], inst->result_scratch + i * pt->result_size, take_r);
        results[i].error[sizeof(results[i].error) - 1] = '\0';
    }
    return rc;
}
