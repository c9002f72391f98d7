/* The VPL subcommands shared by `gust` and the standalone `gust-vpl`. */
#ifndef GUST_VPL_CLI_H
#define GUST_VPL_CLI_H

/* argv[0] is the subcommand:
 *   vpl-check FILE...          prints "ok", or FILE:line:col: message on stderr (exit 1)
 *   vpl-run PROGRAM EVENTS     feeds EVENTS (JSON lines) in order and prints every alert
 *                              as one JSON line; a bad line is reported as
 *                              EVENTS:line: error on stderr and skipped.
 * Returns the process exit status (0 ok, 1 error, 2 usage). */
int gust_vpl_cli_main(int argc, char **argv);

#endif
