/* gust-flow-test: the golden-test runner on its own, for CTest and for users without
 * the full host (`gust test-flow` runs the same code). */
#include "flow.h"

int main(int argc, char **argv)
{
    return gust_flow_test_main(argc, argv);
}
