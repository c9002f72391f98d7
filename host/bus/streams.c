#include "streams.h"

#include <string.h>

#include "../common/log.h"

/* Adds the stream, or accepts an existing one that covers the subject; an existing
 * one whose duplicate window or rollup permission is not what we ask for is updated
 * (both can change on a live stream). */
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
    if (!covered) {
        jsStreamInfo_Destroy(si);
        return gust_err_set(err, GUST_ECONFIG, "stream %s exists but does not take subjects %s",
                            cfg->Name, cfg->Subjects[0]);
    }
    int64_t dup = cfg->Duplicates;
    int rollup = cfg->AllowRollup, direct = cfg->AllowDirect;
    if ((dup > 0 && si->Config->Duplicates != dup) || (rollup && !si->Config->AllowRollup) ||
        (direct && !si->Config->AllowDirect)) {
        si->Config->Duplicates = dup > 0 ? dup : si->Config->Duplicates;
        si->Config->AllowRollup = si->Config->AllowRollup || rollup;
        si->Config->AllowDirect = si->Config->AllowDirect || direct;
        jsStreamInfo *updated = NULL;
        s = js_UpdateStream(&updated, js, si->Config, NULL, &jerr);
        jsStreamInfo_Destroy(updated);
        if (s != NATS_OK) {
            jsStreamInfo_Destroy(si);
            return gust_err_set(err, GUST_EIO, "cannot update stream %s (duplicate window, rollups): %s (jetstream error %d)",
                                cfg->Name, natsStatus_GetText(s), (int)jerr);
        }
        gust_info("bus: stream %s updated: duplicate window %lld ms%s", cfg->Name,
                  (long long)(si->Config->Duplicates / 1000000), rollup ? ", rollups and direct gets allowed" : "");
    } else {
        gust_warn("bus: stream %s exists with another configuration; using it as it is", cfg->Name);
    }
    jsStreamInfo_Destroy(si);
    return 0;
}

/* A file-backed stream of one subject filter; max_msgs 0 keeps everything, otherwise the
 * oldest messages are dropped past it. */
static void stream_config(jsStreamConfig *sc, const char **subjects, const char *name, int64_t max_msgs,
                          int replicas)
{
    jsStreamConfig_Init(sc);
    sc->Name = name;
    sc->Subjects = subjects;
    sc->SubjectsLen = 1;
    sc->Storage = js_FileStorage;
    sc->Retention = js_LimitsPolicy;
    sc->Replicas = replicas > 0 ? replicas : 1;
    if (max_msgs > 0) {
        sc->MaxMsgs = max_msgs;
        sc->Discard = js_DiscardOld;
    }
}

int gust_streams_ensure(jsCtx *js, const struct gust_bus_conf *conf, struct gust_err *err)
{
    jsStreamConfig sc;
    const char *subjects[] = {conf->subjects};
    stream_config(&sc, subjects, conf->stream, 0, conf->replicas);
    sc.Duplicates = conf->duplicate_window_ms * 1000000;
    int rc = ensure_one(js, &sc, err);
    if (rc != 0) {
        return rc;
    }
    const char *dlq[] = {conf->dlq_subjects};
    stream_config(&sc, dlq, conf->dlq_stream, conf->dlq_max_msgs, conf->replicas);
    if ((rc = ensure_one(js, &sc, err)) != 0) {
        return rc;
    }
    /* Checkpoints: each head is rolled up, so only the newest stays, and chunks are read
     * back with direct gets (state_store.c). */
    const char *state[] = {conf->state_subjects};
    stream_config(&sc, state, conf->state_stream, 0, conf->replicas);
    sc.AllowRollup = true;
    sc.AllowDirect = true;
    return ensure_one(js, &sc, err);
}
