/* What a cluster's processes must agree on: a digest of the units a configuration runs.
 *
 * It covers each unit block as written (keys, values, nested blocks, in order) and the
 * contents of each flow's script and each detect unit's rules, not their paths. The
 * top-level, http and nats blocks are left out: a node's name, listen address or token
 * may differ from its peers' without changing what happens to an event. Plugins' own
 * files (an exec command, a secret) are not read. */
#ifndef GUST_CORE_CONFIG_DIGEST_H
#define GUST_CORE_CONFIG_DIGEST_H

#include "../cluster/nodes.h" /* GUST_DIGEST_LEN */
#include "config.h"

/* Writes the digest as GUST_DIGEST_LEN hex digits and a NUL. A file that cannot be read
 * counts as its error, so it still differs from a readable one. */
void gust_config_digest(const struct gust_config *config, char out[GUST_DIGEST_LEN + 1]);
/* The same of one unit: its block as written and its script's or rules' contents. */
void gust_unit_digest(const struct gust_unit_conf *unit, char out[GUST_DIGEST_LEN + 1]);

#endif
