#ifndef CBENCHBASELINE_H
#define CBENCHBASELINE_H
#include <stddef.h>
#include <stdint.h>

/* The raw C equivalents our IPC benchmarks are measured against: the same length-prefixed frames
   over the same socketpair, with blocking read/write and no JSON. */

/* Keeps the calling thread on one CPU (`cpu` >= 0), or lets it run on the process's CPUs again
   (`cpu` < 0): two-process latencies depend on whether the peers share a core, so a benchmark
   places both sides the same way for us and for the baseline. 0, or -1 on error. */
int cbb_run_on_cpu(int cpu);

/* Echoes every frame back until end of stream. Returns frames echoed, or -1 on error.
   `event_driven` != 0: the socket is made non-blocking and each side waits in epoll_wait, as an
   event loop does; a reference for what waiting for readiness costs, not the baseline. */
long cbb_echo_frames(int fd, int event_driven);

/* Sends `frame` (header included) and waits for the echo, `iterations` times; stores each round
   trip in nanoseconds in `rtt_ns`. Returns 0, or -1 on error. `event_driven` as above. */
int cbb_ping_pong(int fd, int event_driven, const uint8_t *frame, size_t length, int iterations, uint64_t *rtt_ns);

/* Writes `frame` `count` times, one write(2) per frame, then waits for a one-byte acknowledgement. */
int cbb_send_frames(int fd, const uint8_t *frame, size_t length, long count);

/* Reads frames until `count` have arrived, then writes a one-byte acknowledgement. */
int cbb_receive_frames(int fd, long count);

/* Forks and execs `path` with a socketpair end as descriptor 3 and waits for its first frame,
   `iterations` times; stores fork-to-frame times in `ns`, kills and reaps each child. 0 or -1. */
int cbb_spawn_handshake(const char *path, int iterations, uint64_t *ns);

/* Encodes `frames` frames of interleaved 48 kHz Float32 with libopus directly (restricted
   low delay, as our driver's default). 0, or -1 on error. */
int cbb_opus_encode(const float *pcm, int frames, int frame_size, int channels, int bitrate, int complexity);

/* Reads `count` values from an eventfd, each the CLOCK_MONOTONIC time it was written at, stores
   now minus that value, and acknowledges each on `ack_fd`. 0 or -1. */
int cbb_eventfd_reader(int fd, int ack_fd, int count, uint64_t *latency_ns);

/* Every 20 ms, encodes 20 ms of 48 kHz stereo with libopus and sends it over a UDP loopback socket
   to a thread that decodes it; stores handover-to-decoded times. 0 or -1. */
int cbb_opus_udp_latency(int count, uint64_t *latency_ns);

/* Encodes `frames` PCM frames of interleaved native-endian 48 kHz stereo int16 with libsbc
   directly, at A2DP's high quality (joint stereo, 16 blocks, 8 subbands, loudness, `bitpool`),
   `frames_per_packet` SBC frames into each reused packet-sized buffer. The bytes encoded, or -1. */
long cbb_sbc_encode(const int16_t *pcm, long frames, int bitpool, int frames_per_packet);

/* The bluetooth-latency baseline: `count` times, a packet's worth of 48 kHz stereo PCM starting
   with a burst is handed over, encoded with libsbc (bitpool 53, 7 frames), sent on a SOCK_SEQPACKET
   socket pair, received, decoded and its onset found; `latencies` gets each handover-to-onset time
   in nanoseconds. 0 on success. */
int cbb_sbc_seqpacket_latency(int count, uint64_t *latencies);

/* The raop-stream baseline: `frames` of 44.1 kHz stereo PCM sent as RAOP audio packets (uncompressed
   ALAC, AES-128-CBC when `key` is given, RTP, a sync packet a second) to UDP `port` on loopback,
   paced in real time. The thread's CPU time in nanoseconds, or -1. */
long long cbb_raop_stream(const int16_t *pcm, long frames, const uint8_t *key, const uint8_t *iv, int port);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cbb_now_ns(void);
#endif
