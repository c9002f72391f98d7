/* Rule tests: a VPL program run over a case's events, its alerts compared with the ones
 * the case expects (`gust vpl-test`, and `gust -t` for a detect block's `tests DIR;`).
 *
 * A case is either
 *   - a JSON file {"events": [...], "expect_alerts": [...]}, events as `gust vpl-run`
 *     reads them (each an object, event time in "ts" or "@timestamp"), or
 *   - a folder with events.jsonl and expected.jsonl (the layout of tests/vpl/cases); its
 *     own program.vpl, when it has one, is run instead of the given program.
 * Alerts are compared in order, field by field; "timestamp" (when the alert was made)
 * is ignored, numbers compare by value (1 equals 1.0). An event the engine cannot decode
 * is reported and skipped, as `gust vpl-run` does. */
#ifndef GUST_CORE_RULE_TEST_H
#define GUST_CORE_RULE_TEST_H

#include <stdio.h>

enum gust_rule_test_result {
    GUST_RULE_TEST_PASS = 0,
    GUST_RULE_TEST_FAIL = 1,  /* the alerts differ: each difference is written to report */
    GUST_RULE_TEST_ERROR = 2, /* the case or the program could not be read or compiled */
};

/* Runs one case against the program at program_path (which may be NULL for a folder
 * case that has its own program.vpl). Writes one line per difference, each starting
 * with the case's path, then "ok" or "FAILED", to report. */
enum gust_rule_test_result gust_rule_test_case(const char *program_path, const char *case_path, FILE *report);

/* Runs every case in dir (its *.json files and the folders holding events.jsonl, in
 * name order) against program_path, adding to *passed and *failed (cases that failed or
 * could not run). Returns the worst result; a dir without a case is an error. */
enum gust_rule_test_result gust_rule_test_dir(const char *program_path, const char *dir, FILE *report, int *passed,
                                              int *failed);

/* `gust vpl-test PROGRAM CASE...` (argv[0] is "vpl-test"); a CASE may also be a folder
 * of cases. Exit status: 0 every case passed, 1 one failed, 2 one could not run. */
int gust_rule_test_main(int argc, char **argv);

#endif
