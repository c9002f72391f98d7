/* A unit reaching into Lua: only host/flow may. */
#include <string.h>
  #  include <lauxlib.h>
