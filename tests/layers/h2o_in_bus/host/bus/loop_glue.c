/* The bus driving h2o itself: h2o belongs to the HTTP layer. */
#include <stdint.h>
#include <h2o.h>
