#ifndef CPIPEWIRESTREAM_H
#define CPIPEWIRESTREAM_H
#include <stddef.h>
#include <stdint.h>

/* A PipeWire video stream consuming one screencast node as raw 32-bit pixels in memory (MemFd or
 * MemPtr; never DMA-BUF), on a PipeWire thread loop of its own. Only what Swift cannot do itself:
 * building SPA pods (variadic macros) and the pw_stream event table. */

/* The byte order of a frame's 32-bit pixels. */
enum mr_pw_pixel_order { MR_PW_BGRX = 1, MR_PW_BGRA, MR_PW_RGBX, MR_PW_RGBA, MR_PW_XRGB, MR_PW_ARGB, MR_PW_XBGR, MR_PW_ABGR };

typedef struct mr_pw_screen_stream mr_pw_screen_stream;

typedef struct {
    void *context;
    /* On the PipeWire thread: a frame's pixels, valid only during the call. */
    void (*frame)(void *context, const uint8_t *pixels, uint32_t width, uint32_t height, int32_t stride, int order);
    /* On the PipeWire thread, once: the stream ended or failed, with a sentence saying which (never NULL;
     * a plain disconnect says so too). Never called from mr_pw_screen_stream_close. */
    void (*ended)(void *context, const char *reason);
    /* On the PipeWire thread: a frame was dropped because its layout does not fit its buffer
     * (mr_pw_frame_rejection's reason, with the figures). */
    void (*rejected)(void *context, const char *reason);
} mr_pw_screen_stream_callbacks;

/* Connects to the PipeWire daemon behind remote_fd and to node. The descriptor is taken: closed
 * with the stream, or before this returns when it fails. NULL on failure, with the reason in error. */
mr_pw_screen_stream *mr_pw_screen_stream_open(int remote_fd, uint32_t node, const char *name,
                                              mr_pw_screen_stream_callbacks callbacks, char *error, size_t error_size);

/* Disconnects and destroys the stream and its connection; no callback runs once this returns. */
void mr_pw_screen_stream_close(mr_pw_screen_stream *stream);

/* Whether a frame of width x height 32-bit pixels, as a producer described it in its buffer's
 * chunk (offset, size and stride, 0 meaning rows packed), lies within both the bytes the producer
 * wrote and the buffer of maxsize bytes: NULL, with the stride to read with in *stride, when every
 * row does; else the reason it cannot be read. Rows shorter than width * 4 bytes or going upwards
 * (a negative stride) are refused. */
const char *mr_pw_frame_rejection(uint32_t width, uint32_t height, uint32_t maxsize, uint32_t offset, uint32_t size,
                                  int32_t chunk_stride, int32_t *stride);

#endif
