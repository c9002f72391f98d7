/* The split-brain guard. Processes of one cluster share their units' consumers: an event
 * goes to whichever process fetches it first. If one of them ran other flows or rules
 * than its peers, the same event would be handled one way or another by chance. So with
 * `cluster on;` a reload asked for through the admin API (POST /reload) is refused when
 * it would leave this node running units that no live peer runs: the first node of a
 * rolling change must be reloaded with ?force=1, the others then follow freely. SIGHUP
 * stays the operator's own lever on the machine: it is not refused, only warned about. */
#ifndef GUST_CORE_GUARD_H
#define GUST_CORE_GUARD_H

#include <stddef.h>

#include "../cluster/nodes.h"

/* Whether reloading config_path may go ahead: 0, or the HTTP status to refuse with (409
 * when the units would differ from every peer's, 503 when the peers cannot be read) and
 * why. A configuration that does not load is let through: the reload itself reports it
 * and changes nothing. nodes NULL (not clustered): always 0. Blocking. */
int gust_guard_reload(struct gust_nodes *nodes, const char *config_path, int force, char *why, size_t size);

#endif
