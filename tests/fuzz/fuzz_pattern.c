/* libFuzzer target: Gust's matcher (host/flow/flow_pattern.c) against LuaJIT's own
 * string library on random calls: find, match, gmatch, gsub (with a replacement string,
 * function or table, and max n), init, plain find. Both must give the same values or
 * the same error. Sizes stay small (a subject of 12 bytes, a pattern of 16) so that
 * LuaJIT's matcher, which has no budget, never runs long.
 *
 * Input: op byte, n byte, subject length byte, pattern length byte, then the subject,
 * the pattern and the rest as gsub's replacement (at most 8 bytes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pattern_diff.h"

#define SUBJECT_MAX 12
#define PATTERN_MAX 16
#define REPL_MAX 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pattern_diff d;
    static int opened;
    if (!opened) {
        if (pd_open(&d) != 0) {
            abort();
        }
        opened = 1;
    }
    if (size < 4) {
        return 0;
    }
    static const char *const ops[] = {"find", "match", "gmatch", "gsub", "find_plain"};
    const char *op = ops[data[0] % 5];
    int n = data[1] < 128 ? INT32_MIN : (int)(data[1] % 16) - 6;
    size_t slen = data[2] % (SUBJECT_MAX + 1), plen = data[3] % (PATTERN_MAX + 1);
    data += 4;
    size -= 4;
    if (slen > size) {
        slen = size;
    }
    const char *s = (const char *)data;
    data += slen;
    size -= slen;
    if (plen > size) {
        plen = size;
    }
    const char *p = (const char *)data;
    data += plen;
    size -= plen;
    size_t alen = size < REPL_MAX ? size : REPL_MAX;
    const char *a = (const char *)data;
    if (alen == 1 && (a[0] == 'f' || a[0] == 't')) {
        alen = 1; /* a function or a table of replacements */
    }
    if (!pd_same(&d, op, s, slen, p, plen, a, alen, n)) {
        fprintf(stderr, "%s(%.*s, %.*s, %.*s, %d)\n  LuaJIT: %s\n  Gust:   %s\n", op, (int)slen, s, (int)plen,
                p, (int)alen, a, n, d.got_ref, d.got_own);
        abort();
    }
    return 0;
}
