/* The command and its environment, shared by the three types.
 *
 * The command is an argv list taken as written: `command /usr/bin/tool --flag "two words";`
 * runs tool with two arguments and no shell is involved. `shell on;` runs one string with
 * /bin/sh -c instead, for pipes and redirections. Secrets never go on argv (any local user
 * can read /proc/PID/cmdline): env_file and env_from put them in the child's environment,
 * which only the same user (and root) can read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

extern char **environ;

#define MAX_SECRET (64 * 1024)

static const char *const ENV_KEYS[] = {"env", "env_from", "env_file"};

/* The list of ENV_KEYS[k]. */
static const struct gust_list *env_list(const struct exec_keys *keys, size_t k)
{
    return k == 0 ? &keys->env : k == 1 ? &keys->env_from : &keys->env_file;
}

static void exec_cmd_free_env(struct exec_cmd *cmd);

/* Length of NAME in "NAME=..." when NAME is a valid variable name and '=' follows, else 0. */
static size_t env_name_len(const char *item)
{
    size_t i = 0;
    if (!((item[0] >= 'A' && item[0] <= 'Z') || (item[0] >= 'a' && item[0] <= 'z') || item[0] == '_')) {
        return 0;
    }
    while ((item[i] >= 'A' && item[i] <= 'Z') || (item[i] >= 'a' && item[i] <= 'z') ||
           (item[i] >= '0' && item[i] <= '9') || item[i] == '_') {
        i++;
    }
    return item[i] == '=' ? i : 0;
}

static int check_env_keys(const struct exec_keys *keys, const struct gust_cfg *cfg, struct gust_err *err)
{
    const struct gust_host_api *h = exec_host;

    for (size_t k = 0; k < 3; k++) {
        const char *key = ENV_KEYS[k];
        const struct gust_list *l = env_list(keys, k);
        for (size_t i = 0; i < l->n; i++) {
            const char *item = l->items[i];
            size_t n = env_name_len(item);
            if (n == 0) {
                /* Items never hold a secret itself (env_file names a file), so quoting is fine. */
                return gust_err_set(err, GUST_ECONFIG, "%s: %s: \"%s\" is not NAME=%s", h->cfg_where(cfg, key),
                                key, item,
                                k == 0   ? "value"
                                : k == 1 ? "VAR"
                                         : "PATH");
            }
            if (k > 0 && item[n + 1] == '\0') {
                return gust_err_set(err, GUST_ECONFIG, "%s: %s: \"%s\" names no %s", h->cfg_where(cfg, key), key,
                                item, k == 1 ? "variable" : "file");
            }
            /* The same name twice would silently shadow one value: refuse it. */
            for (size_t k2 = 0; k2 <= k; k2++) {
                size_t end = k2 == k ? i : env_list(keys, k2)->n;
                for (size_t j = 0; j < end; j++) {
                    const char *other = env_list(keys, k2)->items[j];
                    if (env_name_len(other) == n && strncmp(other, item, n) == 0) {
                        return gust_err_set(err, GUST_ECONFIG, "%s: %s: %.*s is set twice",
                                        h->cfg_where(cfg, key), key, (int)n, item);
                    }
                }
            }
        }
    }
    return 0;
}

int exec_cmd_load(struct exec_cmd *cmd, const struct exec_keys *keys, const struct gust_cfg *cfg,
                  struct gust_err *err)
{
    const struct gust_host_api *h = exec_host;
    size_t n = keys->command.n;
    int shell = keys->shell;

    memset(cmd, 0, sizeof(*cmd));
    if (n == 0 || keys->command.items[0][0] == '\0') {
        return gust_err_set(err, GUST_ECONFIG, "%s: command: empty", h->cfg_where(cfg, "command"));
    }
    if (shell && n != 1) {
        return gust_err_set(
            err, GUST_ECONFIG,
            "%s: command: with `shell on` the command is one string (quote it), not %zu arguments",
            h->cfg_where(cfg, "command"), n);
    }
    if (!shell && n == 1 && strpbrk(keys->command.items[0], " \t\n")) {
        return gust_err_set(
            err, GUST_ECONFIG,
            "%s: command: \"%s\" is one argument holding spaces, but no shell splits it: write "
            "each argv word as its own argument (command /usr/bin/tool --flag;) or set `shell on;`",
            h->cfg_where(cfg, "command"), keys->command.items[0]);
    }
    if (!(cmd->argv = calloc(n + 3, sizeof(*cmd->argv)))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (shell) {
        cmd->argv[0] = (char *)"/bin/sh";
        cmd->argv[1] = (char *)"-c";
        cmd->argv[2] = (char *)keys->command.items[0];
    } else {
        for (size_t i = 0; i < n; i++) {
            cmd->argv[i] = (char *)keys->command.items[i];
        }
    }
    cmd->what = shell ? "/bin/sh -c" : cmd->argv[0];
    cmd->workdir = keys->workdir;
    cmd->timeout_ms = keys->timeout;
    return check_env_keys(keys, cfg, err);
}

static int env_add(struct exec_cmd *cmd, size_t cap, const char *name, size_t nlen, const char *val,
                   size_t vlen)
{
    /* A later setting replaces an inherited one of the same name. */
    for (size_t i = 0; i < cmd->nenv; i++) {
        if (strncmp(cmd->envp[i], name, nlen) == 0 && cmd->envp[i][nlen] == '=') {
            free(cmd->envp[i]);
            cmd->envp[i] = cmd->envp[--cmd->nenv];
            cmd->envp[cmd->nenv] = NULL;
            break;
        }
    }
    if (cmd->nenv + 1 >= cap) {
        return GUST_ENOMEM;
    }
    char *s = malloc(nlen + vlen + 2);
    if (!s) {
        return GUST_ENOMEM;
    }
    memcpy(s, name, nlen);
    s[nlen] = '=';
    memcpy(s + nlen + 1, val, vlen);
    s[nlen + vlen + 1] = '\0';
    cmd->envp[cmd->nenv++] = s;
    cmd->envp[cmd->nenv] = NULL;
    return 0;
}

/* The file's content, trailing newline removed. Errors name the file, never its content. */
static int read_secret(const char *path, char **out, size_t *len, char *why, size_t whysz)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    size_t n = 0;

    if (fd < 0) {
        snprintf(why, whysz, "%s", strerror(errno));
        return -1;
    }
    if (!(buf = malloc(MAX_SECRET + 1))) {
        close(fd);
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, MAX_SECRET + 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            snprintf(why, whysz, "%s", strerror(errno));
            goto fail;
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
        if (n > MAX_SECRET) {
            snprintf(why, whysz, "larger than %d bytes", MAX_SECRET);
            goto fail;
        }
    }
    close(fd);
    if (n > 0 && buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r') {
            n--;
        }
    }
    if (memchr(buf, '\0', n)) {
        explicit_bzero(buf, n);
        free(buf);
        snprintf(why, whysz, "holds a NUL byte, which an environment variable cannot");
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
fail:
    explicit_bzero(buf, n < MAX_SECRET + 1 ? n : MAX_SECRET + 1);
    free(buf);
    close(fd);
    return -1;
}

/* env_file paths are relative to the file that set them, like every PATH key; a LIST key
 * is not resolved by the host, so take the directory from where the key was written. */
static char *resolve(const char *where, const char *path)
{
    char *r = NULL;
    if (path[0] == '/') {
        return strdup(path);
    }
    const char *colon = strrchr(where, ':');
    const char *slash = NULL;
    for (const char *p = where; colon && p < colon; p++) {
        slash = *p == '/' ? p : slash;
    }
    if (!slash) {
        return strdup(path);
    }
    if (asprintf(&r, "%.*s/%s", (int)(slash - where), where, path) < 0) {
        return NULL;
    }
    return r;
}

int exec_cmd_env(struct exec_cmd *cmd, const struct exec_keys *keys, const struct gust_cfg *cfg,
                 struct gust_err *err)
{
    static const char *const BASE[] = {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", NULL};
    const struct gust_host_api *h = exec_host;
    size_t cap = 8;
    int inherit = keys->inherit_env;

    exec_cmd_free_env(cmd); /* a second start rebuilds it */
    for (size_t k = 0; k < 3; k++) {
        cap += env_list(keys, k)->n;
    }
    for (char **e = environ; inherit && *e; e++) {
        cap++;
    }
    if (!(cmd->envp = calloc(cap, sizeof(*cmd->envp)))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (inherit) {
        for (char **e = environ; *e; e++) {
            const char *eq = strchr(*e, '=');
            if (eq && env_add(cmd, cap, *e, (size_t)(eq - *e), eq + 1, strlen(eq + 1)) != 0) {
                return gust_err_set(err, GUST_ENOMEM, "out of memory");
            }
        }
    } else {
        for (size_t i = 0; BASE[i]; i++) {
            const char *v = getenv(BASE[i]);
            if (!v && strcmp(BASE[i], "PATH") == 0) {
                v = "/usr/local/bin:/usr/bin:/bin";
            }
            if (v && env_add(cmd, cap, BASE[i], strlen(BASE[i]), v, strlen(v)) != 0) {
                return gust_err_set(err, GUST_ENOMEM, "out of memory");
            }
        }
    }
    for (size_t i = 0; i < keys->env.n; i++) {
        const char *item = keys->env.items[i];
        size_t n = env_name_len(item);
        if (env_add(cmd, cap, item, n, item + n + 1, strlen(item + n + 1)) != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < keys->env_from.n; i++) {
        const char *item = keys->env_from.items[i];
        size_t n = env_name_len(item);
        const char *v = getenv(item + n + 1);
        if (!v) {
            return gust_err_set(err, GUST_ECONFIG, "%s: env_from %s: $%s is not set in gust's environment",
                            h->cfg_where(cfg, "env_from"), item, item + n + 1);
        }
        if (env_add(cmd, cap, item, n, v, strlen(v)) != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < keys->env_file.n; i++) {
        const char *item = keys->env_file.items[i];
        size_t n = env_name_len(item), len = 0;
        char *path = resolve(h->cfg_where(cfg, "env_file"), item + n + 1), *val = NULL, why[160];
        if (!path) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        if (read_secret(path, &val, &len, why, sizeof(why)) != 0) {
            gust_err_set(err, GUST_ECONFIG, "%s: env_file %.*s: %s: %s", h->cfg_where(cfg, "env_file"), (int)n,
                     item, path, why);
            free(path);
            return GUST_ECONFIG;
        }
        free(path);
        int rc = env_add(cmd, cap, item, n, val, len);
        explicit_bzero(val, len);
        free(val);
        if (rc != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    return 0;
}

static void exec_cmd_free_env(struct exec_cmd *cmd)
{
    for (size_t i = 0; cmd->envp && i < cmd->nenv; i++) {
        explicit_bzero(cmd->envp[i], strlen(cmd->envp[i])); /* not left for a core dump */
        free(cmd->envp[i]);
    }
    free(cmd->envp);
    cmd->envp = NULL;
    cmd->nenv = 0;
}

void exec_cmd_free(struct exec_cmd *cmd)
{
    exec_cmd_free_env(cmd);
    free(cmd->argv);
    cmd->argv = NULL;
}
