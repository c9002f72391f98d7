# One clock module: host/common/time.c alone reads the clock (gust_clock_wall_ms/_ns,
# gust_clock_mono_ms/_ns, gust_clock_deadline). Private copies drifted apart before
# (eight hand-written cond-wait deadlines, three wall_ms). host/vpl, which uses libc alone
# (cmake/layers.cmake), keeps its own. Run: cmake -DSRC=<repo> -P one_clock.cmake
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/host/*.c ${SRC}/plugins/*.c)
set(found "")
foreach(f ${files})
    if(f STREQUAL "host/common/time.c" OR f MATCHES "^host/vpl/")
        continue()
    endif()
    file(STRINGS ${SRC}/${f} lines REGEX "clock_gettime[ \t]*\\(")
    if(lines)
        list(APPEND found ${f})
    endif()
endforeach()
if(found)
    message(FATAL_ERROR "these read the clock themselves; use gust_clock_* (host/common/time.c): ${found}")
endif()
message(STATUS "one clock: only host/common/time.c reads it")
