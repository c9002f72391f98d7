# The host's layers. Each folder of host/ is a static library that links only the layers
# below it, in this order (docs/ARCHITECTURE.md):
#
#   common <- conf <- bus, flow <- unit <- plugin, cluster <- core <- http <- app
#   common <- secret <- core
#                     vpl (libc only) <- unit
#   common <- trace <- unit
#
# and a file of one layer may include the headers of the layers it may use only:
# gust_layer_check refuses, at configure time, an `#include "../X/..."` of any other.
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

function(gust_layer_check layer)
    file(GLOB files ${PROJECT_SOURCE_DIR}/host/${layer}/*.c ${PROJECT_SOURCE_DIR}/host/${layer}/*.h
         ${PROJECT_SOURCE_DIR}/host/${layer}/*/*.c ${PROJECT_SOURCE_DIR}/host/${layer}/*/*.h)
    foreach(f ${files})
        file(STRINGS ${f} lines REGEX "^#include \"(\\.\\./)+[a-z]+/")
        foreach(line ${lines})
            string(REGEX REPLACE "^#include \"(\\.\\./)+([a-z]+)/.*" "\\2" used "${line}")
            if(NOT used IN_LIST GUST_LAYER_${layer} AND NOT used STREQUAL layer)
                file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${f})
                message(FATAL_ERROR "${rel}: ${line}: host/${layer} may use only: ${GUST_LAYER_${layer}} "
                                    "(cmake/layers.cmake)")
            endif()
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
