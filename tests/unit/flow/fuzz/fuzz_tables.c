/* libFuzzer target for what reads lookup-table files: the CSV reader and the table
 * built from it, the JSON tree and the table built from JSON. The first byte picks
 * the format (even: CSV with key column "a", odd: JSON, keyed by "id" when the byte
 * has bit 1 set). Properties besides not crashing: every row a table holds is JSON
 * the tree parser accepts and is found again by its key; a JSON text that parses
 * writes back to a text that parses to an equal tree. */
#include "../../../../host/flow/tables.c"

#include <assert.h>

static void check_rows(const struct gust_table *tb)
{
    for (size_t i = 0; i < tb->n; i++) {
        const struct trow *r = &tb->rows[i];
        size_t len;
        const char *json = gust_table_find(tb, r->key.s, r->key.len, &len);
        assert(json == tb->arena.data + r->json_off && len == r->json_len);
        struct gust_jnode *n = NULL;
        char why[100];
        size_t at;
        assert(gust_jtree_parse(json, len, &n, why, sizeof(why), &at) == 0);
        gust_jtree_free(n);
    }
}

/* Whether some object in the tree names a member twice. */
static int has_repeated_name(const struct gust_jnode *n)
{
    for (size_t i = 0; i < n->n; i++) {
        if (n->type == GUST_J_OBJECT) {
            for (size_t j = i + 1; j < n->n; j++) {
                if (n->key_lens[i] == n->key_lens[j] && memcmp(n->keys[i], n->keys[j], n->key_lens[i]) == 0) {
                    return 1;
                }
            }
        }
        if ((n->type == GUST_J_OBJECT || n->type == GUST_J_ARRAY) && has_repeated_name(n->items[i])) {
            return 1;
        }
    }
    return 0;
}

static void round_trip(const char *text, size_t len)
{
    struct gust_jnode *a = NULL, *b = NULL;
    char why[100];
    size_t at;
    if (gust_jtree_parse(text, len, &a, why, sizeof(why), &at) != 0) {
        return;
    }
    struct gust_buf out = {0};
    assert(gust_jtree_write(a, &out) == 0);
    assert(gust_jtree_parse(out.data, out.len, &b, why, sizeof(why), &at) == 0);
    char path[256] = "";
    /* Objects with a repeated member name are unequal by definition; nothing else may
     * differ. (text is not NUL-terminated: look at the tree, not the bytes.) */
    assert(gust_jtree_equal(a, b, path, sizeof(path)) || has_repeated_name(a));
    gust_buf_free(&out);
    gust_jtree_free(a);
    gust_jtree_free(b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct gust_err err;
    struct gust_table *tb = calloc(1, sizeof(*tb));
    if (tb == NULL) {
        return 0;
    }
    int rc;
    if ((data[0] & 1) == 0) {
        rc = load_csv(tb, "fuzz.csv", text, len, "a", &err);
    } else {
        round_trip(text, len);
        rc = load_json(tb, "fuzz.json", 1, text, len, (data[0] & 2) ? "id" : NULL, &err);
    }
    if (rc == 0) {
        check_rows(tb);
    } else {
        assert(err.msg[0] != '\0');
    }
    table_free(tb);
    return 0;
}
