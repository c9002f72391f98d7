#define _POSIX_C_SOURCE 200809L /* getline, clock_gettime */
#include "vpl_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vpl.h"

static int usage(void)
{
    fprintf(stderr, "usage: vpl-check FILE...\n"
                    "       vpl-run PROGRAM EVENTS.jsonl\n");
    return 2;
}

/* Reads a whole file into a malloc'd buffer. */
static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    while (p != NULL) {
        n += fread(p + n, 1, cap - n, f);
        if (n < cap) {
            break;
        }
        char *q = realloc(p, cap * 2);
        if (q == NULL) {
            free(p);
            p = NULL;
            errno = ENOMEM;
            break;
        }
        p = q;
        cap *= 2;
    }
    int bad = p == NULL || ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        return -1;
    }
    *out = p;
    *len = n;
    return 0;
}

static int load(const char *path, struct vpl_program **prog)
{
    char *src;
    size_t len;
    if (read_file(path, &src, &len) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    struct vpl_error err;
    int rc = vpl_program_compile(src, len, path, prog, &err);
    free(src);
    if (rc != 0) {
        fprintf(stderr, "%s:%s\n", path, err.msg);
        return 1;
    }
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    if (argc < 2) {
        return usage();
    }
    int status = 0;
    for (int i = 1; i < argc; i++) {
        struct vpl_program *prog = NULL;
        status |= load(argv[i], &prog);
        vpl_program_destroy(prog);
    }
    if (status == 0) {
        printf("ok\n");
    }
    return status;
}

static void print_alert(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)stream;
    (void)topic;
    fwrite(json, 1, len, ud);
    fputc('\n', ud);
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
            return 0;
        }
    }
    return 1;
}

static int cmd_run(int argc, char **argv)
{
    if (argc != 3) {
        return usage();
    }
    struct vpl_program *prog = NULL;
    if (load(argv[1], &prog) != 0) {
        return 1;
    }
    FILE *in = fopen(argv[2], "rb");
    if (in == NULL) {
        fprintf(stderr, "%s: %s\n", argv[2], strerror(errno));
        vpl_program_destroy(prog);
        return 1;
    }
    struct vpl_engine *eng = NULL;
    struct vpl_error err;
    if (vpl_engine_create(prog, NULL, &eng, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        fclose(in);
        vpl_program_destroy(prog);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned long lineno = 0;
    while ((n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (blank(line, (size_t)n)) {
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        int64_t tick;
        int kind;
        int rc = vpl_tick_of(line, (size_t)n, &kind, &tick)
                     ? vpl_engine_tick(eng, kind, tick, print_alert, stdout)
                     : vpl_engine_feed_json(eng, line, (size_t)n, NULL, now, print_alert, stdout);
        if (rc != 0) {
            fprintf(stderr, "%s:%lu: %s\n", argv[2], lineno, vpl_engine_last_error(eng));
        }
    }
    free(line);
    fclose(in);
    vpl_engine_destroy(eng);
    vpl_program_destroy(prog);
    return fflush(stdout) == 0 ? 0 : 1;
}

int gust_vpl_cli_main(int argc, char **argv)
{
    if (argc < 1) {
        return usage();
    }
    if (strcmp(argv[0], "vpl-check") == 0) {
        return cmd_check(argc, argv);
    }
    if (strcmp(argv[0], "vpl-run") == 0) {
        return cmd_run(argc, argv);
    }
    return usage();
}
