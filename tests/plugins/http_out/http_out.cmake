# http_out's tests. They need the counting sink (target gust-bench-sink, bench/tools) and
# python3 for status_server.py.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl) # the test GETs the servers' logs
set(http_out_dir ${PROJECT_SOURCE_DIR}/plugins/http_out)

add_library(http_out_test_host STATIC ${CMAKE_CURRENT_LIST_DIR}/fake_host.c ${CMAKE_CURRENT_LIST_DIR}/server_proc.c)
target_include_directories(http_out_test_host PUBLIC ${PROJECT_SOURCE_DIR}/host/include)
target_compile_options(http_out_test_host PUBLIC -Wall -Wextra)
target_link_libraries(http_out_test_host PUBLIC gust_sdk ${CMAKE_DL_LIBS})
set_target_properties(http_out_test_host PROPERTIES C_STANDARD 11)

add_executable(test_http_out ${CMAKE_CURRENT_LIST_DIR}/test_http_out.c)
target_link_libraries(test_http_out PRIVATE http_out_test_host PkgConfig::CURL PkgConfig::YAJL)
set_target_properties(test_http_out PROPERTIES C_STANDARD 11)
add_dependencies(test_http_out http_out gust-bench-sink)
add_test(NAME plugin_http_out
         COMMAND test_http_out $<TARGET_FILE:http_out> $<TARGET_FILE:gust-bench-sink>
                 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/status_server.py)
set_tests_properties(plugin_http_out PROPERTIES TIMEOUT 120)

# The signatures of sign standard and sign hmac on the specifications' own examples.
add_executable(test_http_out_sign ${CMAKE_CURRENT_LIST_DIR}/test_sign.c ${http_out_dir}/http_out_sign.c
                                  ${http_out_dir}/http_out_fwd.c)
target_link_libraries(test_http_out_sign PRIVATE gust_sdk)
set_target_properties(test_http_out_sign PROPERTIES C_STANDARD 11)
add_test(NAME plugin_http_out_sign COMMAND test_http_out_sign)

# Not a test: `build/tests/bench_http_out build/plugins/http_out.so build/bench/gust-bench-sink`
# prints the rate of batches of 256 into the counting sink.
add_executable(bench_http_out ${CMAKE_CURRENT_LIST_DIR}/bench_http_out.c)
target_link_libraries(bench_http_out PRIVATE http_out_test_host)
set_target_properties(bench_http_out PROPERTIES C_STANDARD 11)

# The response reader under libFuzzer (clang), bounded and repeatable: see fuzz_resp.sh.
add_test(NAME plugin_http_out_fuzz COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/fuzz_resp.sh 15)
set_tests_properties(plugin_http_out_fuzz PROPERTIES TIMEOUT 300)
