/* The socket/TLS client moved into libgust-sdk (host/common/sock.c). This empty unit
 * stays only because plugins/mqtt/CMakeLists.txt still lists it; mqtt links gust_sdk
 * (plugins/CMakeLists.txt) for the real one. Remove both once mqtt links it itself. */
typedef int gust_sock_moved_to_the_sdk;
