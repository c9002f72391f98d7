# cmake -DSRC=<source tree> -DROOT=<a tree with host/LAYER/> -DLAYER=<layer> -P check.cmake
# runs cmake/layers.cmake's check of one layer on the tree ROOT: each fixture here is a
# tree with one file that breaks (or keeps) the rules, and the test expects the message.
cmake_minimum_required(VERSION 3.18) # the project's policies (IN_LIST)
set(GUST_LAYER_ROOT ${ROOT})
include(${SRC}/cmake/layers.cmake)
gust_layer_check(${LAYER})
message("host/${LAYER}: no include against the layers")
