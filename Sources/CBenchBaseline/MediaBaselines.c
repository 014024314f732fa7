/* The raw C equivalents of the real-time benchmarks: libopus called directly, an eventfd woken
   directly, and Opus over a UDP loopback socket with no rings, IPC, or jitter buffer. */
#define _GNU_SOURCE
#include "CBenchBaseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <opus.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* An encoder set as the driver's is: 48 kHz, restricted low delay, the given bitrate and complexity. */
static OpusEncoder *make_encoder(int channels, int bitrate, int complexity) {
    int error = 0;
    OpusEncoder *encoder = opus_encoder_create(48000, channels, OPUS_APPLICATION_RESTRICTED_LOWDELAY, &error);
    if (!encoder) return NULL;
    opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
    opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(complexity));
    return encoder;
}

int cbb_opus_encode(const float *pcm, int frames, int frame_size, int channels, int bitrate, int complexity) {
    OpusEncoder *encoder = make_encoder(channels, bitrate, complexity);
    if (!encoder) return -1;
    unsigned char packet[4000];
    for (int i = 0; i < frames; i++) {
        if (opus_encode_float(encoder, pcm + (size_t)i * frame_size * channels, frame_size, packet, sizeof packet) <= 0) {
            opus_encoder_destroy(encoder);
            return -1;
        }
    }
    opus_encoder_destroy(encoder);
    return 0;
}

int cbb_eventfd_reader(int fd, int ack_fd, int count, uint64_t *latency_ns) {
    for (int i = 0; i < count; i++) {
        uint64_t sent = 0, one = 1;
        if (read(fd, &sent, 8) != 8) return -1;
        latency_ns[i] = cbb_now_ns() - sent;
        if (write(ack_fd, &one, 8) != 8) return -1;  /* so the writer never adds two times into one value */
    }
    return 0;
}

struct udp_reader { int fd; int count; uint64_t *latency_ns; int status; };

static void *read_and_decode(void *context) {
    struct udp_reader *reader = context;
    int error = 0;
    OpusDecoder *decoder = opus_decoder_create(48000, 2, &error);
    float pcm[960 * 2];
    unsigned char datagram[4100];
    reader->status = decoder ? 0 : -1;
    for (int i = 0; decoder && i < reader->count; i++) {
        ssize_t n = recv(reader->fd, datagram, sizeof datagram, 0);
        if (n <= 8 || opus_decode_float(decoder, datagram + 8, (int)n - 8, pcm, 960, 0) != 960) { reader->status = -1; break; }
        uint64_t sent;
        memcpy(&sent, datagram, 8);
        reader->latency_ns[i] = cbb_now_ns() - sent;
    }
    if (decoder) opus_decoder_destroy(decoder);
    return NULL;
}

int cbb_opus_udp_latency(int count, uint64_t *latency_ns) {
    int receiver = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), sender = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t length = sizeof address;
    struct timeval patience = { .tv_sec = 2 };  /* a lost datagram ends the run instead of hanging it */
    OpusEncoder *encoder = make_encoder(2, 128000, 10);  /* the driver's settings: 128 kbit/s, complexity 10 */
    if (receiver < 0 || sender < 0 || !encoder || bind(receiver, (struct sockaddr *)&address, sizeof address) != 0 ||
        getsockname(receiver, (struct sockaddr *)&address, &length) != 0 || connect(sender, (struct sockaddr *)&address, sizeof address) != 0 ||
        setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience) != 0) {
        if (encoder) opus_encoder_destroy(encoder);
        if (receiver >= 0) close(receiver);
        if (sender >= 0) close(sender);
        return -1;
    }
    struct udp_reader reader = { receiver, count, latency_ns, 0 };
    pthread_t thread;
    if (pthread_create(&thread, NULL, read_and_decode, &reader) != 0) {
        opus_encoder_destroy(encoder);
        close(receiver);
        close(sender);
        return -1;
    }
    float pcm[960 * 2];
    for (int i = 0; i < 960 * 2; i++) pcm[i] = (i / 2 % 48) < 24 ? 0.5f : -0.5f;
    unsigned char datagram[4100];
    for (int i = 0; i < count; i++) {
        uint64_t now = cbb_now_ns();  /* the samples are handed over now: encode, send */
        memcpy(datagram, &now, 8);
        int n = opus_encode_float(encoder, pcm, 960, datagram + 8, 4000);
        if (n <= 0 || send(sender, datagram, (size_t)n + 8, 0) < 0) break;
        usleep(20000);
    }
    pthread_join(thread, NULL);
    opus_encoder_destroy(encoder);
    close(receiver);
    close(sender);
    return reader.status;
}
