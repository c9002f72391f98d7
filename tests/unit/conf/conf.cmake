# Unit tests of host/conf (needs the gust_conf target): included by tests/CMakeLists.txt, and
# by host/conf/CMakeLists.txt when host/conf is built alone.
foreach(t test_conf_parse test_conf_schema test_conf_value)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    target_link_libraries(${t} PRIVATE gust_conf)
    target_compile_definitions(${t} PRIVATE
        _XOPEN_SOURCE=700
        GUST_CONF_TEST_DATA="${CMAKE_CURRENT_LIST_DIR}/data")
    if(GUST_CONF_STANDALONE)
        target_compile_options(${t} PRIVATE -Wall -Wextra)
    endif()
    add_test(NAME ${t} COMMAND ${t})
endforeach()

# libFuzzer target, off by default: cmake -DGUST_FUZZ=ON with CC=clang.
option(GUST_FUZZ "Build the host.conf fuzzer (clang only)" OFF)
if(GUST_FUZZ)
    add_executable(fuzz_conf ${CMAKE_CURRENT_LIST_DIR}/fuzz_conf.c)
    target_link_libraries(fuzz_conf PRIVATE gust_conf)
    target_compile_definitions(fuzz_conf PRIVATE _XOPEN_SOURCE=700)
    target_compile_options(fuzz_conf PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_conf PRIVATE -fsanitize=fuzzer,address,undefined)
endif()
