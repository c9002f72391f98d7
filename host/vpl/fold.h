/* Rewrites of checked expressions that evaluate the same, faster:
 * - an `if` chain comparing one field (or member) with literals,
 *       if S == l1 then r1 else if S == l2 then r2 ... else d
 *   becomes one X_CASE node that reads S once and compares it with each literal as ==
 *   does (the orders program's country lookup read shipping_address.country four times);
 * - split(s, sep).first() and .last() become one call that builds no array;
 * - a call of builtins over fields and literals written more than once in the stages
 *   that read one event (a .where and the .emit after it) becomes X_MEMO nodes sharing
 *   one slot of the context's memo (eval.h): computed once an event.
 * It also marks the streams that only name their input (`stream S = T.from(...)` that
 * nothing reads) idle: the engine gives them no context per event. */
#ifndef VPL_FOLD_H
#define VPL_FOLD_H

#include "program.h"

/* Rewrites every expression of p's stages and patterns in place (new nodes in p's
 * arena). 0 or VPL_ENOMEM. */
int fold_program(struct vpl_program *p);

#endif
