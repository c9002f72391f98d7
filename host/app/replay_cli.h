/* gust replay: the shadow replay of a flow unit (../core/replay.h) from the command
 * line. */
#ifndef GUST_APP_REPLAY_CLI_H
#define GUST_APP_REPLAY_CLI_H

/* argv[0] is "replay". Returns the exit status: 0 no input differs, 1 some differ,
 * 2 the replay could not run (usage, configuration, script, bus). */
int gust_replay_main(int argc, char **argv);

#endif
