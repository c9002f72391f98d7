# The host's layers. Each folder of host/ is a static library that links only the layers
# below it, in this order (docs/ARCHITECTURE.md):
#
#   common <- conf <- bus, flow <- unit <- plugin, cluster <- core <- http <- app
#   common <- secret <- core
#                     vpl (libc only) <- unit
#   common <- trace <- unit
#
# and a file of one layer may include the headers of the layers it may use only:
# gust_layer_check refuses, at configure time, an `#include "../X/..."` of any other,
# and an `#include <...>` of a library that its layer may not use (below).
set(GUST_LAYER_common "")
set(GUST_LAYER_conf common)
set(GUST_LAYER_trace common)
set(GUST_LAYER_bus common conf)
set(GUST_LAYER_flow common conf)
set(GUST_LAYER_vpl "")
set(GUST_LAYER_secret common)
set(GUST_LAYER_unit common conf bus flow vpl trace)
set(GUST_LAYER_plugin common conf bus unit trace)
set(GUST_LAYER_cluster common conf bus unit trace)
set(GUST_LAYER_core common conf bus flow vpl unit plugin cluster secret trace)
set(GUST_LAYER_http common conf bus flow vpl unit plugin cluster core secret trace)
set(GUST_LAYER_app common conf bus flow vpl unit plugin cluster core http secret trace)

# The libraries whose headers only some layers may include: each its name, what its
# headers' names match, and those layers. Any other `#include <...>` (libc, POSIX, the
# compiler's) is free to every layer; vpl, in none of the lists, uses libc alone.
set(GUST_SYSTEM_LIBS h2o nats lua yajl openssl)
set(GUST_SYSTEM_h2o_HEADERS "^h2o(\\.h$|/)")
set(GUST_SYSTEM_h2o_LAYERS http app) # the front, and the wiring in main
set(GUST_SYSTEM_nats_HEADERS "^nats/")
set(GUST_SYSTEM_nats_LAYERS bus)
set(GUST_SYSTEM_lua_HEADERS "^(lua|luajit|lauxlib|lualib|luaconf)\\.h$|^luajit-")
set(GUST_SYSTEM_lua_LAYERS flow)
set(GUST_SYSTEM_yajl_HEADERS "^yajl/")
set(GUST_SYSTEM_yajl_LAYERS common bus flow cluster core http)
set(GUST_SYSTEM_openssl_HEADERS "^openssl/")
set(GUST_SYSTEM_openssl_LAYERS common bus http)

# The tree checked: this project's, or another's (tests/layers, in script mode).
if(NOT DEFINED GUST_LAYER_ROOT)
    set(GUST_LAYER_ROOT ${PROJECT_SOURCE_DIR})
endif()

function(gust_layer_check layer)
    file(GLOB files ${GUST_LAYER_ROOT}/host/${layer}/*.c ${GUST_LAYER_ROOT}/host/${layer}/*.h
         ${GUST_LAYER_ROOT}/host/${layer}/*/*.c ${GUST_LAYER_ROOT}/host/${layer}/*/*.h)
    foreach(f ${files})
        file(RELATIVE_PATH rel ${GUST_LAYER_ROOT} ${f})
        file(STRINGS ${f} lines REGEX "^#include \"(\\.\\./)+[a-z]+/")
        foreach(line ${lines})
            string(REGEX REPLACE "^#include \"(\\.\\./)+([a-z]+)/.*" "\\2" used "${line}")
            if(NOT used IN_LIST GUST_LAYER_${layer} AND NOT used STREQUAL layer)
                message(FATAL_ERROR "${rel}: ${line}: host/${layer} may use only: ${GUST_LAYER_${layer}} "
                                    "(cmake/layers.cmake)")
            endif()
        endforeach()
        file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*<[^>]+>")
        foreach(line ${lines})
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<([^>]+)>.*" "\\1" header "${line}")
            foreach(lib ${GUST_SYSTEM_LIBS})
                if(header MATCHES "${GUST_SYSTEM_${lib}_HEADERS}" AND NOT layer IN_LIST GUST_SYSTEM_${lib}_LAYERS)
                    list(JOIN GUST_SYSTEM_${lib}_LAYERS ", " allowed)
                    message(FATAL_ERROR "${rel}: ${line}: ${lib} is for the layers ${allowed} only, not "
                                        "host/${layer} (cmake/layers.cmake)")
                endif()
            endforeach()
        endforeach()
    endforeach()
endfunction()

# gust_layer(NAME SOURCES...): the static library gust_NAME of host/NAME, linking the
# layers NAME may use (those that are libraries) and checked as above.
function(gust_layer name)
    gust_layer_check(${name})
    add_library(gust_${name} STATIC ${ARGN})
    target_include_directories(gust_${name} PUBLIC ${PROJECT_SOURCE_DIR}/host/include)
    foreach(dep ${GUST_LAYER_${name}})
        if(TARGET gust_${dep})
            target_link_libraries(gust_${name} PUBLIC gust_${dep})
        endif()
    endforeach()
endfunction()
