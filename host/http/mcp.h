/* POST /mcp: the admin API as an MCP server (Model Context Protocol, Streamable HTTP
 * transport, JSON answers only). mcp.c speaks JSON-RPC 2.0 (one message or a batch);
 * mcp_tools.c holds the tools, each calling the code of the admin route it mirrors. */
#ifndef GUST_HTTP_MCP_H
#define GUST_HTTP_MCP_H

#include <yajl/yajl_tree.h>

#include "internal.h"

/* JSON-RPC 2.0 error codes. */
#define GUST_RPC_PARSE_ERROR (-32700)
#define GUST_RPC_INVALID_REQUEST (-32600)
#define GUST_RPC_METHOD_NOT_FOUND (-32601)
#define GUST_RPC_INVALID_PARAMS (-32602)

/* The answer to one request of the exchange, filled now or when its admin job is done. */
struct gust_mcp_slot;

/* The tool's answer: its route's status and JSON body (a status >= 400 is a tool
 * error, isError in MCP). On the loop. */
void gust_mcp_tool_result(struct gust_mcp_slot *s, int status, const char *body, size_t len);
/* Runs run on the admin worker (q, arg and free_arg as gust_admin_submit_done takes
 * them); its status and body become the tool's answer. */
void gust_mcp_tool_submit(struct gust_mcp_slot *s, void (*run)(struct gust_admin_job *),
                          const struct gust_dlq_query *q, void *arg, void (*free_arg)(void *));
struct gust_http *gust_mcp_slot_http(const struct gust_mcp_slot *s);
/* 1 when the request came with the admin token (not the read-only one). */
int gust_mcp_slot_writer(const struct gust_mcp_slot *s);

/* mcp_tools.c: the tools as tools/list answers them ({"tools": [...]}). */
void gust_mcp_tools_list(struct gust_buf *out);
/* Calls tool name with args (an object, or NULL). 0 once the call is under way (its
 * answer goes to s), or GUST_RPC_INVALID_PARAMS with why (an unknown tool, arguments
 * that do not fit its schema). */
int gust_mcp_tool_call(struct gust_mcp_slot *s, const char *name, yajl_val args, char *why, size_t size);
/* JSON text of v into out. */
void gust_mcp_json_of(yajl_val v, struct gust_buf *out);

#endif
