/* The yajl-based event decoder the engine used before its own (see ref_decoder.c). */
#ifndef VPL_REF_DECODER_H
#define VPL_REF_DECODER_H

#include "json.h"

struct ref_decoder;
struct ref_decoder *ref_decoder_create(const struct symtab *syms, const struct vpl_limits *limits);
void ref_decoder_destroy(struct ref_decoder *d);
int ref_decoder_run(struct ref_decoder *d, struct arena *a, const char *json, size_t len,
                    struct decoded *out, char *err, size_t errlen);

#endif
