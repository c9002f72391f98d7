# The VPL engine's tests (needs the gust_vpl, gust_vpl_flags and gust-vpl targets):
# tests/vpl/cases holds every case the engine is checked against (tests/vpl/README.md);
# docs/VPL.md is the language they follow. Included by tests/CMakeLists.txt, and by
# host/vpl/CMakeLists.txt when host/vpl is built alone.
get_filename_component(vpl_root ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
set(vpl_tests ${CMAKE_CURRENT_LIST_DIR})

foreach(t api snapshot)
    add_executable(vpl-test-${t} ${vpl_tests}/test_${t}.c)
    target_link_libraries(vpl-test-${t} PRIVATE gust_vpl gust_vpl_flags)
endforeach()

find_program(VPL_PYTHON python3 REQUIRED)
# Optionally, a directory of further cases in the same format runs too
# (vpl_acceptance_cases): -DVPL_EXTRA_CASES=DIR. None by default: the build reads nothing
# outside the repository.
set(VPL_EXTRA_CASES "" CACHE PATH "a directory of further VPL cases to run (optional)")
if(VPL_EXTRA_CASES AND IS_DIRECTORY ${VPL_EXTRA_CASES})
    add_test(NAME vpl_acceptance_cases
             COMMAND ${VPL_PYTHON} ${vpl_tests}/run_cases.py $<TARGET_FILE:gust-vpl> ${VPL_EXTRA_CASES})
endif()
add_test(NAME vpl_own_cases
         COMMAND ${VPL_PYTHON} ${vpl_tests}/run_cases.py $<TARGET_FILE:gust-vpl> ${vpl_tests}/cases)
# Every example of the language reference runs and prints what the document shows.
add_test(NAME vpl_doc_examples
         COMMAND ${VPL_PYTHON} ${vpl_tests}/doc_examples.py $<TARGET_FILE:gust-vpl> ${vpl_root}/docs/VPL.md)
add_test(NAME vpl_errors
         COMMAND ${VPL_PYTHON} ${vpl_tests}/check_errors.py $<TARGET_FILE:gust-vpl> ${vpl_tests}/errors)
add_test(NAME vpl_rules
         COMMAND sh -c "\"$1\" vpl-check \"$2\"/*.vpl" sh $<TARGET_FILE:gust-vpl> ${vpl_root}/rules)
add_test(NAME vpl_api COMMAND vpl-test-api)
add_test(NAME vpl_snapshot
         COMMAND sh -c "\"$1\" \"$2\"/*/" sh $<TARGET_FILE:vpl-test-snapshot> ${vpl_tests}/cases)
add_test(NAME vpl_fuzz COMMAND sh ${vpl_tests}/fuzz/run.sh 20)
set_tests_properties(vpl_fuzz PROPERTIES TIMEOUT 300)
