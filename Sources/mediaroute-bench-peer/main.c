/* The raw C baseline for `driver-restart`: the smallest program that does what a driver does to
   start, send one length-prefixed frame on descriptor 3, then wait until the socket closes. */
#include <string.h>
#include <unistd.h>

int main(void) {
    static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\",\"params\":{\"version\":1}}";
    unsigned char frame[4 + sizeof body];
    size_t n = sizeof body - 1;
    frame[0] = 0; frame[1] = 0; frame[2] = (unsigned char)(n >> 8); frame[3] = (unsigned char)n;
    memcpy(frame + 4, body, n);
    if (write(3, frame, 4 + n) != (ssize_t)(4 + n)) return 1;
    char byte;
    while (read(3, &byte, 1) > 0) {}
    return 0;
}
