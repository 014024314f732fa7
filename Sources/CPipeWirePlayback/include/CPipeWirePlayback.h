#ifndef MEDIAROUTE_PIPEWIRE_PLAYBACK_H
#define MEDIAROUTE_PIPEWIRE_PLAYBACK_H

#include <stddef.h>

/* A playback stream on the PipeWire server the environment names (PIPEWIRE_REMOTE in
 * PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR), fed interleaved Float32 through a ring of its own;
 * the session manager links it to the default sink. Its thread loop runs PipeWire's events, and
 * PipeWire's real-time data thread takes the samples out of the ring; the writer blocks until the
 * ring has room. SPA's pods and event tables are macros and structs of
 * callbacks, which Swift cannot build: hence this C part. */
typedef struct mr_pw_playback mr_pw_playback;

/* Connects and opens the stream, holding at most `buffer_frames` in its ring; NULL on failure,
 * with a sentence in `error`. */
mr_pw_playback *mr_pw_playback_open(const char *name, unsigned rate, unsigned channels, unsigned buffer_frames,
                                    char *error, size_t error_size);

/* Writes `frames` frames, waiting for room; 0, or a negative errno with a sentence in `error` when
 * the stream failed or took nothing for `stall_ms`. */
int mr_pw_playback_write(mr_pw_playback *playback, const float *samples, size_t frames, unsigned stall_ms,
                         char *error, size_t error_size);

/* Frames written and not yet heard: in the ring and in the graph. */
long mr_pw_playback_delay(mr_pw_playback *playback);

/* Times the graph asked for samples the writer had not given yet (it ran dry). */
unsigned long mr_pw_playback_underruns(mr_pw_playback *playback);

/* Closes the stream after playing what it holds (for at most a second) when `drain`, else at once. */
void mr_pw_playback_close(mr_pw_playback *playback, int drain);

#endif
