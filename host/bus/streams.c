#include "streams.h"

#include <string.h>

#include "../common/log.h"

/* Adds the stream, or accepts an existing one that covers the subject. */
static int ensure_one(jsCtx *js, jsStreamConfig *cfg, struct gust_err *err)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddStream(&si, js, cfg, NULL, &jerr);
    if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return 0;
    }
    /* It exists with another configuration (limits changed by an operator, say):
     * keep it, as long as it still takes our subjects. */
    s = js_GetStreamInfo(&si, js, cfg->Name, NULL, &jerr);
    if (s != NATS_OK) {
        return gust_err_set(err, GUST_EIO, "cannot create stream %s: %s (jetstream error %d)",
                            cfg->Name, natsStatus_GetText(s), (int)jerr);
    }
    int covered = 0;
    for (int i = 0; i < si->Config->SubjectsLen; i++) {
        covered |= strcmp(si->Config->Subjects[i], cfg->Subjects[0]) == 0;
    }
    jsStreamInfo_Destroy(si);
    if (!covered) {
        return gust_err_set(err, GUST_ECONFIG, "stream %s exists but does not take subjects %s",
                            cfg->Name, cfg->Subjects[0]);
    }
    gust_warn("bus: stream %s exists with another configuration; using it as it is", cfg->Name);
    return 0;
}

/* A file-backed stream of one subject filter; max_msgs 0 keeps everything, otherwise the
 * oldest messages are dropped past it. */
static int ensure(jsCtx *js, const char *name, const char *subject, int64_t max_msgs, int replicas,
                  struct gust_err *err)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {subject};
    sc.Name = name;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_LimitsPolicy;
    sc.Replicas = replicas > 0 ? replicas : 1;
    if (max_msgs > 0) {
        sc.MaxMsgs = max_msgs;
        sc.Discard = js_DiscardOld;
    }
    return ensure_one(js, &sc, err);
}

int gust_streams_ensure(jsCtx *js, const struct gust_bus_conf *conf, struct gust_err *err)
{
    int rc = ensure(js, conf->stream, conf->subjects, 0, conf->replicas, err);
    return rc != 0 ? rc : ensure(js, conf->dlq_stream, conf->dlq_subjects, conf->dlq_max_msgs, conf->replicas, err);
}
