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
    /* Bounds asked for (host.conf's max_bytes, max_age) replace the stream's; none asked
     * for leaves an operator's own. */
    int bounded = cfg->MaxBytes > 0 || cfg->MaxAge > 0;
    if ((dup > 0 && si->Config->Duplicates != dup) || (rollup && !si->Config->AllowRollup) ||
        (direct && !si->Config->AllowDirect) ||
        (bounded && (si->Config->MaxBytes != cfg->MaxBytes || si->Config->MaxAge != cfg->MaxAge ||
                     si->Config->Discard != cfg->Discard))) {
        si->Config->Duplicates = dup > 0 ? dup : si->Config->Duplicates;
        si->Config->AllowRollup = si->Config->AllowRollup || rollup;
        si->Config->AllowDirect = si->Config->AllowDirect || direct;
        if (bounded) {
            si->Config->MaxBytes = cfg->MaxBytes;
            si->Config->MaxAge = cfg->MaxAge;
            si->Config->Discard = cfg->Discard;
        }
        jsStreamInfo *updated = NULL;
        s = js_UpdateStream(&updated, js, si->Config, NULL, &jerr);
        jsStreamInfo_Destroy(updated);
        if (s != NATS_OK) {
            jsStreamInfo_Destroy(si);
            return gust_err_set(err, GUST_EIO, "cannot update stream %s (duplicate window, rollups): %s (jetstream error %d)",
                                cfg->Name, natsStatus_GetText(s), (int)jerr);
        }
        gust_info("bus: stream %s updated: duplicate window %lld ms, max bytes %lld, max age %lld s%s", cfg->Name,
                  (long long)(si->Config->Duplicates / 1000000), (long long)si->Config->MaxBytes,
                  (long long)(si->Config->MaxAge / 1000000000), rollup ? ", rollups and direct gets allowed" : "");
    } else {
        gust_warn("bus: stream %s exists with another configuration; using it as it is", cfg->Name);
    }
    jsStreamInfo_Destroy(si);
    return 0;
}

/* A file-backed stream of one subject filter; max_msgs 0 keeps everything, otherwise the
 * oldest messages are dropped past it (and past max_bytes, when not 0). */
static void stream_config(jsStreamConfig *sc, const char **subjects, const char *name, int64_t max_msgs,
                          int64_t max_bytes, int replicas)
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
    if (max_bytes > 0) {
        sc->MaxBytes = max_bytes;
        sc->Discard = js_DiscardOld;
    }
}

int gust_streams_ensure(jsCtx *js, const struct gust_bus_conf *conf, struct gust_err *err)
{
    jsStreamConfig sc;
    const char *subjects[] = {conf->subjects};
    stream_config(&sc, subjects, conf->stream, 0, 0, conf->replicas);
    sc.Duplicates = conf->duplicate_window_ms * 1000000;
    /* Full, the event stream refuses what comes (discard new): an event not yet
     * consumed is never dropped to make room. retention.c removes the consumed ones. */
    if (conf->max_bytes > 0) {
        sc.MaxBytes = conf->max_bytes;
        sc.Discard = js_DiscardNew;
    }
    if (conf->max_age_ms > 0) {
        sc.MaxAge = conf->max_age_ms * 1000000;
    }
    int rc = ensure_one(js, &sc, err);
    if (rc != 0) {
        return rc;
    }
    const char *dlq[] = {conf->dlq_subjects};
    stream_config(&sc, dlq, conf->dlq_stream, conf->dlq_max_msgs, conf->dlq_max_bytes, conf->replicas);
    if ((rc = ensure_one(js, &sc, err)) != 0) {
        return rc;
    }
    /* Checkpoints: each head is rolled up, so only the newest stays, and chunks are read
     * back with direct gets (state_store.c). */
    const char *state[] = {conf->state_subjects};
    stream_config(&sc, state, conf->state_stream, 0, 0, conf->replicas);
    sc.AllowRollup = true;
    sc.AllowDirect = true;
    return ensure_one(js, &sc, err);
}
