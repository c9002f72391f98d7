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

int gust_streams_ensure(jsCtx *js, const struct gust_bus_conf *conf, struct gust_err *err)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {conf->subjects};
    sc.Name = conf->stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    int rc = ensure_one(js, &sc, err);
    if (rc != 0) {
        return rc;
    }
    jsStreamConfig dc;
    jsStreamConfig_Init(&dc);
    const char *dlq_subjects[] = {conf->dlq_subjects};
    dc.Name = conf->dlq_stream;
    dc.Subjects = dlq_subjects;
    dc.SubjectsLen = 1;
    dc.Storage = js_FileStorage;
    dc.Retention = js_LimitsPolicy;
    dc.MaxMsgs = conf->dlq_max_msgs;
    dc.Discard = js_DiscardOld;
    return ensure_one(js, &dc, err);
}
