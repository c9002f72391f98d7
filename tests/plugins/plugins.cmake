# The plugins' tests. A plugin in plugins/ is built like one out of tree (its own
# CMakeLists.txt holds the plugin alone); its tests and test tools are here.

# Test plugins for the loader: one good, one for each way a plugin is refused, and one
# built against the recorded headers of an older minor ABI.
function(gust_test_plugin name)
    add_library(${name} MODULE ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/abi/test_source.c)
    target_link_libraries(${name} PRIVATE gust_sdk)
    target_compile_definitions(${name} PRIVATE ${ARGN})
    set_target_properties(${name} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-plugins)
endfunction()

gust_test_plugin(test_source)
gust_test_plugin(test_bad_abi TEST_ABI_MAJOR=99)
gust_test_plugin(test_new_minor TEST_ABI_MINOR=999)
gust_test_plugin(test_fail_init TEST_FAIL_INIT)
gust_test_plugin(test_no_entry TEST_NO_ENTRY)

# ABI 1.0 exactly as released: its own headers only, no SDK (1.0 had none).
add_library(test_old_minor MODULE ${CMAKE_CURRENT_LIST_DIR}/abi/test_old_minor.c)
target_include_directories(test_old_minor BEFORE PRIVATE ${CMAKE_CURRENT_LIST_DIR}/abi/v1_0)
set_target_properties(test_old_minor PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-plugins)

include(${CMAKE_CURRENT_LIST_DIR}/http_out/http_out.cmake)

# mqtt, the pure parts: topic <-> subject mapping, packets, payload policy, JSON.
set(mqtt_dir ${PROJECT_SOURCE_DIR}/plugins/mqtt)
add_executable(test_mqtt_unit ${CMAKE_CURRENT_LIST_DIR}/mqtt/test_mqtt_unit.c ${mqtt_dir}/mqtt_subject.c
    ${mqtt_dir}/mqtt_payload.c ${mqtt_dir}/mqtt_wire.c ${mqtt_dir}/mqtt_props.c)
target_include_directories(test_mqtt_unit PRIVATE ${mqtt_dir})
target_compile_options(test_mqtt_unit PRIVATE -Wall -Wextra)
target_link_libraries(test_mqtt_unit PRIVATE gust_sdk)
set_target_properties(test_mqtt_unit PROPERTIES C_STANDARD 11 RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME unit_mqtt COMMAND test_mqtt_unit)

# kafka without a broker: the commit rule and the payload and header mapping; and the
# test cluster, librdkafka's mock brokers on loopback (tests/e2e/test_kafka.py).
set(kafka_dir ${PROJECT_SOURCE_DIR}/plugins/kafka)
pkg_check_modules(TEST_RDKAFKA REQUIRED IMPORTED_TARGET rdkafka) # plugins/kafka's target is not seen here
add_executable(test_kafka_unit ${CMAKE_CURRENT_LIST_DIR}/kafka/test_kafka_unit.c ${kafka_dir}/kafka_track.c
    ${kafka_dir}/kafka_payload.c)
target_include_directories(test_kafka_unit PRIVATE ${kafka_dir})
target_compile_options(test_kafka_unit PRIVATE -Wall -Wextra)
target_link_libraries(test_kafka_unit PRIVATE gust_sdk PkgConfig::TEST_RDKAFKA)
set_target_properties(test_kafka_unit PROPERTIES C_STANDARD 11 RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME unit_kafka COMMAND test_kafka_unit)
add_executable(gust-kafka-mock ${CMAKE_CURRENT_LIST_DIR}/../tools/kafka_mock.c)
target_link_libraries(gust-kafka-mock PRIVATE PkgConfig::TEST_RDKAFKA)
set_target_properties(gust-kafka-mock PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

# amqp: a small client for its e2e test (publish, get, count, declare): no Python AMQP
# library here.
pkg_check_modules(TEST_RABBITMQ REQUIRED IMPORTED_TARGET librabbitmq)
add_executable(gust-amqp-tool ${CMAKE_CURRENT_LIST_DIR}/../tools/amqp_tool.c)
target_compile_options(gust-amqp-tool PRIVATE -Wall -Wextra)
target_link_libraries(gust-amqp-tool PRIVATE PkgConfig::TEST_RABBITMQ)
set_target_properties(gust-amqp-tool PROPERTIES C_STANDARD 11 RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
