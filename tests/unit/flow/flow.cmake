# The flow runtime's tests (needs the gust_flow and gust-flow-test targets): its unit
# tests, the golden cases through the runner, the runner's own failures, the table readers
# under libFuzzer, and the micro-benchmark's smoke run. Included by tests/CMakeLists.txt,
# and by host/flow/CMakeLists.txt when host/flow is built alone.
get_filename_component(flow_root ${CMAKE_CURRENT_LIST_DIR}/../../.. ABSOLUTE)
set(flow_tests ${CMAKE_CURRENT_LIST_DIR})
set(flow_fixtures ${flow_root}/tests/flows/fixtures)

foreach(t test_json test_flow test_state test_api test_tables test_pattern)
    add_executable(gust-ut-flow-${t} ${flow_tests}/${t}.c)
    target_include_directories(gust-ut-flow-${t} PRIVATE ${flow_tests})
    target_compile_definitions(gust-ut-flow-${t} PRIVATE _GNU_SOURCE GUST_FIXTURES="${flow_fixtures}")
    target_link_libraries(gust-ut-flow-${t} PRIVATE gust_flow)
    add_test(NAME flow.unit.${t} COMMAND gust-ut-flow-${t})
endforeach()

# Golden cases of the benchmark flow.
file(GLOB orders_cases ${flow_root}/tests/flows/bench_orders/*.json)
add_test(NAME flow.golden.bench_orders
    COMMAND gust-flow-test ${flow_root}/scripts/bench_orders.lua ${orders_cases})

# Each fixture NAME.lua comes with its cases NAME.json or NAME.*.json.
file(GLOB flow_scripts ${flow_fixtures}/*.lua)
foreach(script ${flow_scripts})
    get_filename_component(name ${script} NAME_WE)
    file(GLOB cases ${flow_fixtures}/${name}.json ${flow_fixtures}/${name}.*.json)
    if(cases)
        add_test(NAME flow.golden.${name} COMMAND gust-flow-test ${script} ${cases})
    endif()
endforeach()

# The runner itself must report a wrong expectation and exit 1.
set(mismatch ${flow_root}/tests/flows/runner/mismatch.json)
add_test(NAME flow.runner.fails COMMAND gust-flow-test ${flow_root}/scripts/bench_orders.lua ${mismatch})
set_tests_properties(flow.runner.fails PROPERTIES WILL_FAIL TRUE)
add_test(NAME flow.runner.report COMMAND gust-flow-test ${flow_root}/scripts/bench_orders.lua ${mismatch})
set_tests_properties(flow.runner.report PROPERTIES
    PASS_REGULAR_EXPRESSION "FAIL mismatch: emit 1: payload differs at \\.country.*\n0 passed, 1 failed")

# Broken and wrong cases: each FAILs with its reason and the run goes on (no crash).
find_program(GUST_FLOW_PYTHON python3 REQUIRED)
add_test(NAME flow.runner.bad_cases
    COMMAND ${GUST_FLOW_PYTHON} ${flow_root}/tests/flows/runner/check_runner.py
            $<TARGET_FILE:gust-flow-test> ${flow_fixtures}/passthrough.lua ${flow_root}/tests/flows/runner)

# The lookup-table readers (CSV, JSON tree) under libFuzzer, bounded (needs clang).
add_test(NAME flow.fuzz.tables COMMAND sh ${flow_tests}/fuzz/run.sh 20)
set_tests_properties(flow.fuzz.tables PROPERTIES TIMEOUT 300)

# The micro-benchmark (bench/WORKLOAD.md's orders flow), run small as a test.
add_executable(bench-flow ${flow_tests}/bench_flow.c)
target_link_libraries(bench-flow PRIVATE gust_flow)
target_compile_definitions(bench-flow PRIVATE _GNU_SOURCE
    GUST_BENCH_SCRIPT="${flow_root}/scripts/bench_orders.lua" GUST_PASSTHROUGH_SCRIPT="${flow_fixtures}/passthrough.lua")
add_test(NAME flow.bench.smoke COMMAND bench-flow 2000)
