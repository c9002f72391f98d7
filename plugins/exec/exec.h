/* exec plugin internals shared by its files. Nothing here is exported from the .so.
 *
 *   exec.c         the descriptor: types exec_source, exec_stream, exec_sink; init/fini
 *   exec_conf.c    keys all types share: the command, its environment (secrets), timeout
 *   exec_child.c   spawning a child in its own process group, killing and reaping it
 *   exec_lines.c   splitting a pipe into lines (bounded length), JSON object check
 *   exec_reader.c  exec_source (run every interval) and exec_stream (long-lived child)
 *   exec_sink.c    exec_sink: one child per message, body on stdin */
#ifndef GUST_EXEC_H
#define GUST_EXEC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

extern const struct gust_host_api *exec_host;


/* How to run the command. argv is built at create from the config (no I/O); envp at start,
 * because env_file reads files. envp holds secrets: it is wiped when freed and never
 * logged. */
struct exec_cmd {
    char **argv; /* owned array; strings borrowed from the cfg (or literals) */
    char **envp; /* owned array of owned "NAME=value" strings, NULL-terminated */
    size_t nenv;
    const char *workdir; /* borrowed, NULL: gust's working directory */
    int64_t timeout_ms;
    const char *what; /* argv[0] for messages (never the other arguments) */
};

/* The keys of every exec type as written, bound by the type's schema (strings borrowed
 * from the cfg, which outlives the instance). A type binds the ones it has. */
struct exec_keys {
    struct gust_list command;
    int shell;
    const char *workdir;
    struct gust_list env;
    struct gust_list env_file;
    struct gust_list env_from;
    int inherit_env;
    int64_t timeout;
    int64_t max_inflight;
    /* exec_source, exec_stream */
    const char *subject;
    int64_t max_line;
    int64_t interval;    /* exec_source */
    int64_t restart_min; /* exec_stream */
    int64_t restart_max;
};

#define EXEC_KEY(f, T, def, flags, help) GUST_KEY(struct exec_keys, f, T, def, flags, help)
#define EXEC_KEY_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct exec_keys, f, T, def, flags, lo, hi, help)
/* The keys every type has; expand inside a schema table. */
#define EXEC_COMMON_KEYS                                                                                       \
    EXEC_KEY(command, LIST, NULL, GUST_K_REQUIRED,                                                             \
             "program and arguments, one argv word per argument, run without a shell (see `shell`)"),          \
        EXEC_KEY(shell, BOOL, "off", 0, "on: command is one string run as /bin/sh -c STRING"),                 \
        EXEC_KEY(workdir, PATH, NULL, 0, "working directory of the child (default: gust's)"),                  \
        EXEC_KEY(env, LIST, NULL, 0, "NAME=value put in the child's environment, repeatable (not secret)"),    \
        EXEC_KEY(env_file, LIST, NULL, GUST_K_SECRET,                                                          \
                 "NAME=PATH: the file's content (trailing newline removed) becomes $NAME in the child; read at " \
                 "start, never logged; PATH relative to host.conf"),                                           \
        EXEC_KEY(env_from, LIST, NULL, 0, "NAME=VAR: gust's own $VAR becomes $NAME in the child"),             \
        EXEC_KEY(inherit_env, BOOL, "off", 0,                                                                  \
                 "on: the child gets gust's whole environment; off: only PATH, HOME, LANG, LC_ALL, TZ, TMPDIR")

/* Fills cmd->argv, workdir, timeout and checks the env keys' syntax. No I/O. keys and cfg
 * (for file:line in messages) are borrowed. */
int exec_cmd_load(struct exec_cmd *cmd, const struct exec_keys *keys, const struct gust_cfg *cfg,
                  struct gust_err *err);
/* Builds cmd->envp: reads env_file files, looks up env_from variables. */
int exec_cmd_env(struct exec_cmd *cmd, const struct exec_keys *keys, const struct gust_cfg *cfg,
                 struct gust_err *err);
void exec_cmd_free(struct exec_cmd *cmd);

/* A running child: its own process group (pgid == pid), pipes non-blocking and close-on-exec
 * on our side. */
struct exec_child {
    pid_t pid;
    int in;  /* write end of its stdin, or -1 */
    int out; /* read end of its stdout, or -1 */
    int err; /* read end of its stderr, or -1 */
    int reaped;
    int status; /* wait status once reaped */
    int64_t started_ms;
    char tail[512]; /* last bytes of stderr (ring) */
    size_t tail_len, tail_pos;
};

enum { EXEC_PIPE_IN = 1, EXEC_PIPE_OUT = 2 };

/* Starts cmd with extra (NULL or NULL-terminated "NAME=value" strings) added to its env.
 * Every descriptor of gust but the pipes is closed in the child; signals are reset. */
int exec_child_spawn(struct exec_child *c, const struct exec_cmd *cmd, const char *const *extra, int pipes,
                     struct gust_err *err);
/* Non-blocking: 1 when the child has exited; it is then reaped and what was left of its
 * process group killed. */
int exec_child_exited(struct exec_child *c);
/* SIGTERM to the group, up to grace_ms for it to exit, then SIGKILL; reaps. */
void exec_child_kill(struct exec_child *c, int grace_ms);
/* Reads what stderr has (non-blocking) into the tail; returns 0 at EOF (fd closed), 1 otherwise. */
int exec_child_read_err(struct exec_child *c);
void exec_child_close(struct exec_child *c);
/* "exit 3", "killed by signal 9 (Killed)" */
void exec_status_text(int status, char *buf, size_t size);
/* The stderr tail as one printable line (newlines as " | "), at most size-1 bytes. */
void exec_child_tail(const struct exec_child *c, char *buf, size_t size);

/* Splits what a pipe delivers into lines of at most max bytes; longer lines are skipped. */
struct exec_lines {
    char *buf;
    size_t len, cap, max;
    int skipping; /* inside a too-long line: drop up to the next newline */
};

/* What the reader does with each line; returns -1 to stop reading (stopping). */
typedef int (*exec_line_fn)(void *ud, char *line, size_t len);
typedef void (*exec_toolong_fn)(void *ud, size_t max);

int exec_lines_init(struct exec_lines *l, size_t max);
void exec_lines_free(struct exec_lines *l);
/* Reads once from fd; calls fn for each complete line. Returns 1 while open, 0 at EOF
 * (the last unterminated line is passed on too), -1 when fn asked to stop. */
int exec_lines_read(struct exec_lines *l, int fd, exec_line_fn fn, exec_toolong_fn toolong, void *ud);

/* 1 when data is exactly one JSON object (white space around it allowed). */
int exec_is_json_object(const char *data, size_t len);
/* A printable preview: control bytes as '?', at most size-1 bytes. */
void exec_preview(const char *data, size_t len, char *buf, size_t size);

/* At most `burst` messages per 10 s window; the rest are counted and summarised. */
struct exec_ratelog {
    int64_t window_start;
    int n;
    uint64_t suppressed;
};
int exec_ratelog_ok(struct exec_ratelog *r, struct gust_instance *inst);

/* The types; exec.c puts them in the descriptor. */
extern const struct gust_schema_key exec_source_schema[];
extern const struct gust_schema_key exec_stream_schema[];
int exec_source_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                       struct gust_err *err);
int exec_stream_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                       struct gust_err *err);
int exec_reader_start(void *ctx, struct gust_err *err);
void exec_reader_stop(void *ctx);
void exec_reader_destroy(void *ctx);

extern const struct gust_schema_key exec_sink_schema[];
int exec_sink_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                     struct gust_err *err);
int exec_sink_start(void *ctx, struct gust_err *err);
int exec_sink_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
void exec_sink_stop(void *ctx);
void exec_sink_destroy(void *ctx);

#endif
