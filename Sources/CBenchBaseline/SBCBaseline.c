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
