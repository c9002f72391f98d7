/* gust-vpl: the VPL subcommands without the rest of gust, for tests and rule authors. */
#include <stdio.h>

#include "vpl_cli.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gust-vpl vpl-check FILE... | vpl-run PROGRAM EVENTS.jsonl\n");
        return 2;
    }
    return gust_vpl_cli_main(argc - 1, argv + 1);
}
