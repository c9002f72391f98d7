# libgust-sdk's own tests.
foreach(t sdk sdk_rate sdk_hmac)
    string(REPLACE "sdk_" "" src ${t})
    add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${src}.c)
    target_link_libraries(test_${t} PRIVATE gust_sdk)
    set_target_properties(test_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    add_test(NAME unit_${t} COMMAND test_${t})
    set_tests_properties(unit_${t} PROPERTIES TIMEOUT 60)
endforeach()
