/* MCP's gust_flow_test: a flow script run on given events in the flow sandbox
 * (flow.h: the same runtime a flow unit, `gust test-flow` and the shadow replay run),
 * with no bus, no durable state and no lookup tables. On the admin worker: each
 * event may run up to the timeout. */
#ifndef GUST_HTTP_MCP_FLOW_TEST_H
#define GUST_HTTP_MCP_FLOW_TEST_H

#include <yajl/yajl_tree.h>

#include "internal.h"

/* The run script and events (an array of objects) ask for, as an argument for
 * gust_mcp_flow_test_run (freed with gust_mcp_flow_test_free), or why not. */
const char *gust_mcp_flow_test_prepare(const char *script, yajl_val events, void **arg);
void gust_mcp_flow_test_run(struct gust_admin_job *job);
void gust_mcp_flow_test_free(void *arg);

#endif
