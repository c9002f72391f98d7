/* Recursive-descent parser for the VPL subset (docs/VPL.md). Nesting is bounded by
 * VPL_MAX_DEPTH so no input can exhaust the stack. */
#ifndef VPL_PARSER_H
#define VPL_PARSER_H

#include "ast.h"
#include "lexer.h"

#define VPL_MAX_DEPTH 200

int parse_program(const struct tokens *toks, struct arena *arena, struct ast_program *out,
                  struct vpl_error *err);

#endif
