/* The raw C equivalent of what the AirPlay sender does per packet: 352 stereo frames framed as an
   uncompressed ALAC element, their whole 16-byte blocks encrypted with AES-128-CBC from the
   session IV (OpenSSL), an RTP header, a sync packet each second, sendto() on UDP, paced in real
   time against CLOCK_MONOTONIC. No RTSP, no resends, no timing answers. */
#include "CBenchBaseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { frames_per_packet = 352, alac_bytes = (23 + frames_per_packet * 2 * 16 + 3 + 7) / 8 };

typedef struct { uint8_t *out; uint64_t accumulator; int pending; } bit_writer;

static void put_bits(bit_writer *w, uint32_t value, int bits) {
    w->accumulator = (w->accumulator << bits) | (value & ((1u << bits) - 1));
    w->pending += bits;
    while (w->pending >= 8) {
        w->pending -= 8;
        *w->out++ = (uint8_t)(w->accumulator >> w->pending);
    }
    w->accumulator &= (1ull << w->pending) - 1;
}

static void alac_uncompressed(const int16_t *pcm, uint8_t *out) {
    bit_writer w = { out, 0, 0 };
    put_bits(&w, 1, 3); put_bits(&w, 0, 4); put_bits(&w, 0, 12); put_bits(&w, 0, 1); put_bits(&w, 0, 2); put_bits(&w, 1, 1);
    for (int i = 0; i < frames_per_packet * 2; i++) put_bits(&w, (uint16_t)pcm[i], 16);
    put_bits(&w, 7, 3);
    if (w.pending > 0) *w.out++ = (uint8_t)(w.accumulator << (8 - w.pending));
}

static uint64_t thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

long long cbb_raop_stream(const int16_t *pcm, long frames, const uint8_t *key, const uint8_t *iv, int port) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EVP_CIPHER_CTX *ctx = key ? EVP_CIPHER_CTX_new() : NULL;
    if (ctx) {
        EVP_EncryptInit_ex(ctx, EVP_aes_128_cbc(), NULL, key, iv);
        EVP_CIPHER_CTX_set_padding(ctx, 0);
    }
    uint8_t packet[12 + alac_bytes + 16], sync[20] = { 0x90, 0xd4, 0x00, 0x07 };
    uint16_t sequence = 1;
    uint32_t timestamp = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t cpu = thread_cpu_ns();
    long packets = frames / frames_per_packet;
    for (long n = 0; n < packets; n++) {
        uint64_t due_ns = (uint64_t)n * frames_per_packet * 1000000000ull / 44100;
        struct timespec due = { start.tv_sec + (time_t)(due_ns / 1000000000ull), start.tv_nsec + (long)(due_ns % 1000000000ull) };
        if (due.tv_nsec >= 1000000000L) { due.tv_sec++; due.tv_nsec -= 1000000000L; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
        if (n % (44100 / frames_per_packet) == 0) {
            uint32_t next = htonl(timestamp);
            memcpy(sync + 16, &next, 4);
            sendto(fd, sync, sizeof sync, 0, (struct sockaddr *)&to, sizeof to);
        }
        packet[0] = 0x80;
        packet[1] = n == 0 ? 0xe0 : 0x60;
        uint16_t seq = htons(sequence++);
        uint32_t ts = htonl(timestamp), ssrc = htonl(0x12345678);
        memcpy(packet + 2, &seq, 2); memcpy(packet + 4, &ts, 4); memcpy(packet + 8, &ssrc, 4);
        alac_uncompressed(pcm + n * frames_per_packet * 2, packet + 12);
        if (ctx) {
            int whole = alac_bytes / 16 * 16, written = 0;
            EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv);
            EVP_EncryptUpdate(ctx, packet + 12, &written, packet + 12, whole);
        }
        sendto(fd, packet, 12 + alac_bytes, 0, (struct sockaddr *)&to, sizeof to);
        timestamp += frames_per_packet;
    }
    cpu = thread_cpu_ns() - cpu;
    if (ctx) EVP_CIPHER_CTX_free(ctx);
    close(fd);
    return (long long)cpu;
}
