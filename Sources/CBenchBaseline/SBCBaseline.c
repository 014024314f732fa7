/* The raw C equivalent of the A2DP driver's encoding path: libsbc called in a plain loop over the
   same PCM, at the same settings, filling packet-sized buffers, with no ring, conversion or headers. */
#include "CBenchBaseline.h"

#include <sbc/sbc.h>

long cbb_sbc_encode(const int16_t *pcm, long frames, int bitpool, int frames_per_packet) {
    sbc_t sbc;
    if (sbc_init(&sbc, 0) != 0) return -1;
    sbc.frequency = SBC_FREQ_48000;
    sbc.mode = SBC_MODE_JOINT_STEREO;
    sbc.blocks = SBC_BLK_16;
    sbc.subbands = SBC_SB_8;
    sbc.allocation = SBC_AM_LOUDNESS;
    sbc.bitpool = (uint8_t)bitpool;
    sbc.endian = SBC_LE;
    size_t codesize = sbc_get_codesize(&sbc), frame_length = sbc_get_frame_length(&sbc);
    unsigned char packet[2048];
    if ((size_t)frames_per_packet * frame_length > sizeof packet) {
        sbc_finish(&sbc);
        return -1;
    }
    const unsigned char *input = (const unsigned char *)pcm;
    size_t total = (size_t)frames * 4, offset = 0;
    long encoded = 0;
    int in_packet = 0;
    while (offset + codesize <= total) {
        ssize_t written = 0;
        ssize_t used = sbc_encode(&sbc, input + offset, codesize, packet + (size_t)in_packet * frame_length, frame_length, &written);
        if (used != (ssize_t)codesize || written != (ssize_t)frame_length) {
            sbc_finish(&sbc);
            return -1;
        }
        offset += codesize;
        encoded += written;
        if (++in_packet == frames_per_packet) in_packet = 0;
    }
    sbc_finish(&sbc);
    return encoded;
}

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void sbc_setup(sbc_t *sbc) {
    sbc->frequency = SBC_FREQ_48000;
    sbc->mode = SBC_MODE_JOINT_STEREO;
    sbc->blocks = SBC_BLK_16;
    sbc->subbands = SBC_SB_8;
    sbc->allocation = SBC_AM_LOUDNESS;
    sbc->bitpool = 53;
    sbc->endian = SBC_LE;
}

int cbb_sbc_seqpacket_latency(int count, uint64_t *latencies) {
    enum { frames_per_packet = 7, samples = 128 * frames_per_packet };
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) != 0) return -1;
    sbc_t encoder, decoder;
    if (sbc_init(&encoder, 0) != 0 || sbc_init(&decoder, 0) != 0) return -1;
    sbc_setup(&encoder);
    int16_t pcm[samples * 2], decoded[samples * 2];
    for (int i = 0; i < samples; i++) pcm[2 * i] = pcm[2 * i + 1] = (int16_t)((i / 24) % 2 ? 20000 : -20000);  /* 1 kHz square burst */
    size_t codesize = sbc_get_codesize(&encoder), frame_length = sbc_get_frame_length(&encoder);
    unsigned char packet[1024], received[1024];
    int status = 0;
    for (int n = 0; n < count && status == 0; n++) {
        uint64_t start = cbb_now_ns();
        size_t length = 13;  /* RTP and SBC headers, as the driver writes */
        for (int f = 0; f < frames_per_packet; f++) {
            ssize_t written = 0;
            if (sbc_encode(&encoder, (const unsigned char *)pcm + (size_t)f * codesize, codesize, packet + length, frame_length, &written) != (ssize_t)codesize) status = -1;
            length += (size_t)written;
        }
        if (send(pair[0], packet, length, 0) != (ssize_t)length) status = -1;
        ssize_t got = recv(pair[1], received, sizeof received, 0);
        if (got <= 13) status = -1;
        size_t offset = 13, out = 0;
        int onset = 0;
        while (!onset && status == 0 && offset + frame_length <= (size_t)got) {
            size_t produced = 0;
            ssize_t used = sbc_decode(&decoder, received + offset, (size_t)got - offset, (unsigned char *)decoded + out, sizeof decoded - out, &produced);
            if (used <= 0) { status = -1; break; }
            for (size_t i = out / 2; i < (out + produced) / 2; i++) if (decoded[i] > 8000 || decoded[i] < -8000) { onset = 1; break; }
            offset += (size_t)used;
            out += produced;
        }
        if (!onset) status = -1;
        latencies[n] = cbb_now_ns() - start;
    }
    sbc_finish(&encoder);
    sbc_finish(&decoder);
    close(pair[0]);
    close(pair[1]);
    return status;
}
