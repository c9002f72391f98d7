/* What a sequence's captures keep: the fields of a step's event that anything after
 * it can read. A run holds its captured events for as long as it is open, and with
 * tens of thousands of runs open the captures are most of the state; an event keeps
 * every field the program reads anywhere (the decoder's rule), most of which no later
 * step, negation or emit of this sequence reads through the step's alias.
 *
 * Reads through an alias are the only reads of a capture (a whole alias is refused
 * at check time, a fn reads no field), except two kept whole: the last step of a
 * pattern with an absence (its event is the match: bare names of the stages after
 * the pattern read it, and without a projection it is the stream's output), and a
 * Kleene slot's fallback (an empty closure's alias reads the step before: the field
 * is kept there too). Snapshots hold what the captures hold, and a checkpoint is
 * restored only into the program it was taken with (its digest), so they stay exact. */
#ifndef VPL_KEEP_H
#define VPL_KEEP_H

#include "program.h"

/* Sets steps[k].keep of every pattern of p (the join's layout is a window's, kept
 * whole). 0 or VPL_ENOMEM. */
int keep_program(struct vpl_program *p);

#endif
