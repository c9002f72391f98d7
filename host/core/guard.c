#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "config.h"
#include "config_digest.h"

int gust_guard_reload(struct gust_nodes *nodes, const char *config_path, int force, char *why, size_t size)
{
    if (nodes == NULL) {
        return 0;
    }
    struct gust_config *config = NULL;
    struct gust_err err = {{0}};
    if (gust_config_load(config_path, &config, &err) != 0) {
        return 0;
    }
    char next[GUST_DIGEST_LEN + 1], running[GUST_DIGEST_LEN + 1];
    gust_config_digest(config, next);
    gust_config_destroy(config);
    gust_nodes_running(nodes, running);
    if (strcmp(next, running) == 0) {
        return 0; /* the units stay as they are */
    }
    struct gust_node *peers = malloc(GUST_NODES_MAX * sizeof(*peers));
    size_t npeers = 0;
    int status = 0;
    if (peers == NULL || gust_nodes_peers(nodes, peers, &npeers, &err) != 0) {
        snprintf(why, size, "cluster on: cannot compare this node's units with its peers' (%s); "
                 "POST /reload?force=1 reloads anyway", peers == NULL ? "out of memory" : err.msg);
        status = 503;
    } else if (npeers > 0) {
        status = 409;
        for (size_t i = 0; i < npeers; i++) {
            if (strcmp(peers[i].config, next) == 0) {
                status = 0; /* a peer runs them already: this node catches up */
            }
        }
        if (status != 0) {
            snprintf(why, size, "cluster on: the files on this node would run units %s, but no peer runs them "
                     "(%s runs %s%s); this node would then handle events differently from its peers. Put the same "
                     "files on every node, then reload the first with POST /reload?force=1 and the others after it",
                     next, peers[0].name, peers[0].config, npeers > 1 ? ", and others" : "");
        }
    }
    free(peers);
    if (status != 0 && force) {
        gust_warn("cluster: reload forced: %s", why);
        status = 0;
    }
    return status;
}
