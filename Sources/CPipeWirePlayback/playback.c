#include "CPipeWirePlayback.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/utils/result.h>
#include <spa/utils/ringbuffer.h>

struct mr_pw_playback {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_stream *stream;
    struct spa_hook core_listener;
    struct spa_hook stream_listener;
    struct spa_ringbuffer ring;
    uint8_t *ring_data;
    uint32_t ring_size;   /* bytes, a power of two */
    uint32_t limit;       /* the most bytes the ring holds */
    uint32_t stride;      /* bytes per frame */
    unsigned rate;
    int failed;           /* a negative errno once the stream or the connection failed */
    char failure[200];
    /* Shared with the data thread, which takes no lock: */
    atomic_int started;   /* the graph took samples once */
    atomic_int draining;
    atomic_ulong underruns;
    int drained;
};

/* Runs on the thread loop, under its lock: wakes a writer waiting for room (or a drain). */
static int wake_writer(struct spa_loop *loop, bool async, uint32_t seq, const void *data, size_t size, void *user_data) {
    (void)loop, (void)async, (void)seq, (void)data, (void)size;
    struct mr_pw_playback *p = user_data;
    pw_thread_loop_signal(p->loop, false);
    return 0;
}

/* Runs on PipeWire's data thread (PW_STREAM_FLAG_RT_PROCESS), real-time where the system allows
 * it (client-rt.conf loads module-rt: rtkit, or the process's own right): a thread of normal
 * priority, late for a graph cycle on a busy machine, is heard as a gap of one period. It takes no
 * lock: the ring has one reader and one writer, and the writer is woken through the thread loop. */
static void on_process(void *data) {
    struct mr_pw_playback *p = data;
    struct pw_buffer *b = pw_stream_dequeue_buffer(p->stream);
    if (b == NULL) return;
    struct spa_data *d = &b->buffer->datas[0];
    if (d->data == NULL) {
        pw_stream_queue_buffer(p->stream, b);
        return;
    }
    uint32_t want = d->maxsize - d->maxsize % p->stride;
    if (b->requested > 0 && b->requested * p->stride < want) want = (uint32_t)b->requested * p->stride;
    uint32_t index;
    int32_t filled = spa_ringbuffer_get_read_index(&p->ring, &index);
    uint32_t n = filled > 0 ? SPA_MIN((uint32_t)filled, want) : 0;
    n -= n % p->stride;
    if (n > 0) {
        spa_ringbuffer_read_data(&p->ring, p->ring_data, p->ring_size, index & (p->ring_size - 1), d->data, n);
        spa_ringbuffer_read_update(&p->ring, index + n);
        atomic_store(&p->started, 1);
    }
    if (n < want) {
        memset((uint8_t *)d->data + n, 0, want - n);
        if (atomic_load(&p->started) && !atomic_load(&p->draining)) atomic_fetch_add(&p->underruns, 1);
    }
    d->chunk->offset = 0;
    d->chunk->stride = (int32_t)p->stride;
    d->chunk->size = want;
    /* In frames, as PipeWire advises for audio: the sum over queued buffers is pw_time.queued. */
    b->size = want / p->stride;
    pw_stream_queue_buffer(p->stream, b);
    pw_loop_invoke(pw_thread_loop_get_loop(p->loop), wake_writer, 0, NULL, 0, false, p);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct mr_pw_playback *p = data;
    (void)old;
    if (state == PW_STREAM_STATE_ERROR && p->failed == 0) {
        p->failed = -EIO;
        snprintf(p->failure, sizeof p->failure, "the PipeWire stream failed: %s", error ? error : "no reason given");
    }
    pw_thread_loop_signal(p->loop, false);
}

static void on_drained(void *data) {
    struct mr_pw_playback *p = data;
    p->drained = 1;
    pw_thread_loop_signal(p->loop, false);
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .process = on_process,
    .drained = on_drained,
};

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct mr_pw_playback *p = data;
    (void)seq;
    if (id == PW_ID_CORE && p->failed == 0) {
        p->failed = res < 0 ? res : -EIO;
        snprintf(p->failure, sizeof p->failure, "the PipeWire server dropped the connection: %s", message ? message : spa_strerror(res));
    }
    pw_thread_loop_signal(p->loop, false);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_core_error,
};

/* A deadline `ns` from now on the monotonic clock. */
static struct timespec deadline_in(int64_t ns) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t at = (int64_t)t.tv_sec * SPA_NSEC_PER_SEC + t.tv_nsec + ns;
    t.tv_sec = (time_t)(at / SPA_NSEC_PER_SEC);
    t.tv_nsec = (long)(at % SPA_NSEC_PER_SEC);
    return t;
}

/* Waits on the loop (its lock held) for a signal until the monotonic `deadline`; false once it has
 * passed. libpipewire 0.3.65 has no monotonic wait: pw_thread_loop_new makes its condition on
 * CLOCK_REALTIME and pw_thread_loop_get_time reads that clock (as its code does; no property
 * chooses another). So each wait is for what is left of the monotonic deadline, as a real-time
 * instant taken just before: a wall clock stepped forward (NTP on a board with no RTC) ends a wait
 * early, and the deadline, checked again, sends it back to wait; a step backward during a wait
 * still lengthens that wait by the step (unless a signal comes, as every graph cycle sends one). */
static int wait_until(struct mr_pw_playback *p, const struct timespec *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t left = (int64_t)(deadline->tv_sec - now.tv_sec) * SPA_NSEC_PER_SEC + (deadline->tv_nsec - now.tv_nsec);
    if (left <= 0) return 0;
    struct timespec until;
    pw_thread_loop_get_time(p->loop, &until, left);
    /* A timeout before the monotonic deadline is a stepped wall clock: report a wake-up, and the
     * caller, finding nothing changed, waits again for what is left. */
    pw_thread_loop_timed_wait_full(p->loop, &until);
    return 1;
}

static void destroy(struct mr_pw_playback *p) {
    if (p->loop) pw_thread_loop_lock(p->loop);
    if (p->stream) pw_stream_destroy(p->stream);
    if (p->core) pw_core_disconnect(p->core);
    if (p->loop) pw_thread_loop_unlock(p->loop);
    if (p->loop) pw_thread_loop_stop(p->loop);
    if (p->context) pw_context_destroy(p->context);
    if (p->loop) pw_thread_loop_destroy(p->loop);
    free(p->ring_data);
    free(p);
}

mr_pw_playback *mr_pw_playback_open(const char *name, unsigned rate, unsigned channels, unsigned buffer_frames,
                                    char *error, size_t error_size) {
    if (channels == 0 || channels > SPA_AUDIO_MAX_CHANNELS || rate == 0 || buffer_frames == 0) {
        snprintf(error, error_size, "PipeWire playback needs 1 to %d channels, a rate and a buffer", SPA_AUDIO_MAX_CHANNELS);
        return NULL;
    }
    pw_init(NULL, NULL);
    struct mr_pw_playback *p = calloc(1, sizeof *p);
    if (p == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    p->rate = rate;
    p->stride = channels * sizeof(float);
    p->limit = buffer_frames * p->stride;
    p->ring_size = 1;
    while (p->ring_size < p->limit) p->ring_size <<= 1;
    p->ring_data = malloc(p->ring_size);
    spa_ringbuffer_init(&p->ring);
    p->loop = pw_thread_loop_new("mediaroute-sound", NULL);
    /* client-rt.conf loads module-rt (PipeWire 1.x's client.conf does too, and may drop the file). */
    if (p->loop) {
        p->context = pw_context_new(pw_thread_loop_get_loop(p->loop), pw_properties_new(PW_KEY_CONFIG_NAME, "client-rt.conf", NULL), 0);
        if (p->context == NULL) p->context = pw_context_new(pw_thread_loop_get_loop(p->loop), NULL, 0);
    }
    if (p->ring_data == NULL || p->context == NULL || pw_thread_loop_start(p->loop) < 0) {
        snprintf(error, error_size, "cannot start PipeWire's client loop: %s", strerror(errno));
        destroy(p);
        return NULL;
    }
    pw_thread_loop_lock(p->loop);
    p->core = pw_context_connect(p->context, NULL, 0);
    if (p->core == NULL) {
        snprintf(error, error_size, "cannot connect to the server: %s", strerror(errno));
        goto fail;
    }
    pw_core_add_listener(p->core, &p->core_listener, &core_events, p);
    struct pw_properties *props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Playback",
                                                    PW_KEY_MEDIA_ROLE, "Music", PW_KEY_NODE_NAME, name, NULL);
    /* The graph's period: 10 ms, or less when the ring is shorter than three of them. */
    unsigned quantum = SPA_MIN(rate / 100, SPA_MAX(buffer_frames / 3, 64u));
    pw_properties_setf(props, PW_KEY_NODE_LATENCY, "%u/%u", quantum, rate);
    p->stream = pw_stream_new(p->core, name, props);
    if (p->stream == NULL) {
        snprintf(error, error_size, "cannot make a stream: %s", strerror(errno));
        goto fail;
    }
    pw_stream_add_listener(p->stream, &p->stream_listener, &stream_events, p);
    uint8_t pod[1024];
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(pod, sizeof pod);
    struct spa_audio_info_raw info = SPA_AUDIO_INFO_RAW_INIT(.format = SPA_AUDIO_FORMAT_F32, .rate = rate, .channels = channels);
    if (channels == 1) {
        info.position[0] = SPA_AUDIO_CHANNEL_MONO;
    } else if (channels == 2) {
        info.position[0] = SPA_AUDIO_CHANNEL_FL;
        info.position[1] = SPA_AUDIO_CHANNEL_FR;
    } else {
        SPA_FLAG_SET(info.flags, SPA_AUDIO_FLAG_UNPOSITIONED);
    }
    const struct spa_pod *params[1] = { spa_format_audio_raw_build(&builder, SPA_PARAM_EnumFormat, &info) };
    int res = pw_stream_connect(p->stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
                                PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS | PW_STREAM_FLAG_RT_PROCESS, params, 1);
    /* Ready once the session manager linked it to a sink and the graph runs it, so that the first
     * samples written flow at once instead of waiting in the ring while the writer's source piles
     * up; a stream nothing links would never play. */
    struct timespec deadline = deadline_in(5 * SPA_NSEC_PER_SEC);
    enum pw_stream_state state = PW_STREAM_STATE_CONNECTING;
    while (res >= 0 && p->failed == 0) {
        state = pw_stream_get_state(p->stream, NULL);
        if (state == PW_STREAM_STATE_STREAMING || !wait_until(p, &deadline)) break;
    }
    if (res < 0 || p->failed || state != PW_STREAM_STATE_STREAMING) {
        if (res < 0) snprintf(error, error_size, "cannot connect its stream: %s", spa_strerror(res));
        else if (p->failed) snprintf(error, error_size, "%s", p->failure);
        else if (state == PW_STREAM_STATE_PAUSED) snprintf(error, error_size, "nothing linked its stream to a sink within 5 s (is its session manager, wireplumber, running, and is there a sink?)");
        else snprintf(error, error_size, "the server did not make its stream within 5 s");
        goto fail;
    }
    pw_thread_loop_unlock(p->loop);
    return p;
fail:
    pw_thread_loop_unlock(p->loop);
    destroy(p);
    return NULL;
}

int mr_pw_playback_write(mr_pw_playback *p, const float *samples, size_t frames, unsigned stall_ms,
                         char *error, size_t error_size) {
    const uint8_t *bytes = (const uint8_t *)samples;
    size_t left = frames * p->stride;
    int result = 0;
    pw_thread_loop_lock(p->loop);
    struct timespec deadline = deadline_in((int64_t)stall_ms * SPA_NSEC_PER_MSEC);
    while (left > 0) {
        if (p->failed) {
            snprintf(error, error_size, "%s", p->failure);
            result = p->failed;
            break;
        }
        uint32_t index;
        int32_t filled = spa_ringbuffer_get_write_index(&p->ring, &index);
        uint32_t room = filled >= 0 && (uint32_t)filled < p->limit ? p->limit - (uint32_t)filled : 0;
        room -= room % p->stride;
        if (room == 0) {
            if (!wait_until(p, &deadline)) {
                snprintf(error, error_size, "it took none for %u ms (did its sink go away?)", stall_ms);
                result = -ETIMEDOUT;
                break;
            }
            continue;
        }
        uint32_t n = (uint32_t)SPA_MIN((size_t)room, left);
        spa_ringbuffer_write_data(&p->ring, p->ring_data, p->ring_size, index & (p->ring_size - 1), bytes, n);
        spa_ringbuffer_write_update(&p->ring, index + n);
        bytes += n;
        left -= n;
        deadline = deadline_in((int64_t)stall_ms * SPA_NSEC_PER_MSEC);
    }
    pw_thread_loop_unlock(p->loop);
    return result;
}

long mr_pw_playback_delay(mr_pw_playback *p) {
    pw_thread_loop_lock(p->loop);
    uint32_t index;
    int32_t filled = spa_ringbuffer_get_read_index(&p->ring, &index);
    long frames = filled > 0 ? filled / (int32_t)p->stride : 0;
    struct pw_time time = { 0 };
    if (pw_stream_get_time_n(p->stream, &time, sizeof time) == 0) {
        /* The graph's delay to the device (in its rate), then what is queued to it and not taken
         * yet (our buffers' `size`, in frames) and what waits in its resampler (in our frames). */
        if (time.rate.denom > 0 && time.delay > 0) frames += (long)(time.delay * (int64_t)time.rate.num * p->rate / time.rate.denom);
        frames += (long)time.queued + (long)time.buffered;
    }
    pw_thread_loop_unlock(p->loop);
    return frames;
}

unsigned long mr_pw_playback_underruns(mr_pw_playback *p) {
    return atomic_load(&p->underruns);
}

void mr_pw_playback_close(mr_pw_playback *p, int drain) {
    if (drain) {
        pw_thread_loop_lock(p->loop);
        atomic_store(&p->draining, 1);
        struct timespec deadline = deadline_in(SPA_NSEC_PER_SEC);
        uint32_t index;
        while (p->failed == 0 && p->started && spa_ringbuffer_get_read_index(&p->ring, &index) > 0) {
            if (!wait_until(p, &deadline)) break;
        }
        if (p->failed == 0 && p->started && pw_stream_flush(p->stream, true) >= 0) {
            while (p->failed == 0 && !p->drained) {
                if (!wait_until(p, &deadline)) break;
            }
        }
        pw_thread_loop_unlock(p->loop);
    }
    destroy(p);
}
