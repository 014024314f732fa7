#include "CPipeWireStream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/utils/result.h>

struct mr_pw_screen_stream {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_stream *stream;
    struct spa_hook core_listener;
    struct spa_hook stream_listener;
    mr_pw_screen_stream_callbacks callbacks;
    struct spa_video_info_raw format;
    int order;
    int closing;
    int ended;
};

static int order_of(enum spa_video_format format) {
    switch (format) {
    case SPA_VIDEO_FORMAT_BGRx: return MR_PW_BGRX;
    case SPA_VIDEO_FORMAT_BGRA: return MR_PW_BGRA;
    case SPA_VIDEO_FORMAT_RGBx: return MR_PW_RGBX;
    case SPA_VIDEO_FORMAT_RGBA: return MR_PW_RGBA;
    case SPA_VIDEO_FORMAT_xRGB: return MR_PW_XRGB;
    case SPA_VIDEO_FORMAT_ARGB: return MR_PW_ARGB;
    case SPA_VIDEO_FORMAT_xBGR: return MR_PW_XBGR;
    case SPA_VIDEO_FORMAT_ABGR: return MR_PW_ABGR;
    default: return 0;
    }
}

/* Once only, and never from our own close. Called with the loop locked (on its thread). */
static void end(struct mr_pw_screen_stream *s, const char *reason) {
    if (s->closing || s->ended) return;
    s->ended = 1;
    s->callbacks.ended(s->callbacks.context, reason);
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct mr_pw_screen_stream *s = data;
    if (id != PW_ID_CORE) return;
    char reason[256];
    snprintf(reason, sizeof reason, res == -EPIPE ? "the PipeWire connection closed (%s)" : "PipeWire reported an error: %s",
             message ? message : spa_strerror(res));
    end(s, reason);
}

static const struct pw_core_events core_events = { PW_VERSION_CORE_EVENTS, .error = on_core_error };

static void on_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct mr_pw_screen_stream *s = data;
    if (state == PW_STREAM_STATE_ERROR) {
        char reason[256];
        snprintf(reason, sizeof reason, "the screencast stream failed: %s", error ? error : "no reason given");
        end(s, reason);
    } else if (state == PW_STREAM_STATE_UNCONNECTED && old != PW_STREAM_STATE_UNCONNECTED) {
        end(s, "the screencast stream was disconnected (the compositor stopped it or went away)");
    }
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct mr_pw_screen_stream *s = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    struct spa_video_info_raw format = { 0 };
    if (spa_format_video_raw_parse(param, &format) < 0) return;
    s->format = format;
    s->order = order_of(format.format);
    /* Frames in memory we can map: never DMA-BUF. */
    uint8_t bytes[256];
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[1];
    params[0] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    pw_stream_update_params(s->stream, params, 1);
}

static void on_process(void *data) {
    struct mr_pw_screen_stream *s = data;
    struct pw_buffer *latest = NULL, *buffer;
    /* Only the newest frame matters: hand back any older ones at once. */
    while ((buffer = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        if (latest) pw_stream_queue_buffer(s->stream, latest);
        latest = buffer;
    }
    if (latest == NULL) return;
    struct spa_data *plane = &latest->buffer->datas[0];
    uint32_t width = s->format.size.width, height = s->format.size.height;
    if (plane->data != NULL && plane->chunk->size > 0 && !(plane->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) && s->order != 0) {
        const struct spa_chunk *chunk = plane->chunk;
        int32_t stride = 0;
        const char *rejected = mr_pw_frame_rejection(width, height, plane->maxsize, chunk->offset, chunk->size, chunk->stride, &stride);
        if (rejected == NULL) {
            s->callbacks.frame(s->callbacks.context, (const uint8_t *)plane->data + chunk->offset, width, height, stride, s->order);
        } else {
            char reason[256];
            snprintf(reason, sizeof reason, "%s (%ux%u pixels, stride %d, chunk at %u of %u bytes, buffer of %u bytes)",
                     rejected, width, height, chunk->stride, chunk->offset, chunk->size, plane->maxsize);
            s->callbacks.rejected(s->callbacks.context, reason);
        }
    }
    pw_stream_queue_buffer(s->stream, latest);
}

const char *mr_pw_frame_rejection(uint32_t width, uint32_t height, uint32_t maxsize, uint32_t offset, uint32_t size,
                                  int32_t chunk_stride, int32_t *stride) {
    if (width == 0 || height == 0) return "the frame has no size";
    if (chunk_stride < 0) return "the frame's rows go upwards (a negative stride)";
    uint64_t row = (uint64_t)width * 4;
    uint64_t used = chunk_stride == 0 ? row : (uint64_t)chunk_stride;
    if (used < row) return "the frame's stride is shorter than a row of its pixels";
    if (used > INT32_MAX) return "the frame's stride is too large";
    uint64_t end = (uint64_t)offset + used * (height - 1) + row;
    uint64_t limit = SPA_MIN((uint64_t)maxsize, (uint64_t)offset + size);
    if (end > limit) return "the frame's rows reach past the data the producer wrote or past its buffer";
    *stride = (int32_t)used;
    return NULL;
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS, .state_changed = on_state, .param_changed = on_param_changed, .process = on_process,
};

static void destroy(struct mr_pw_screen_stream *s) {
    if (s->loop) pw_thread_loop_lock(s->loop);
    s->closing = 1;
    if (s->stream) {
        pw_stream_disconnect(s->stream);
        pw_stream_destroy(s->stream);
    }
    if (s->core) pw_core_disconnect(s->core);
    if (s->loop) {
        pw_thread_loop_unlock(s->loop);
        pw_thread_loop_stop(s->loop);
    }
    if (s->context) pw_context_destroy(s->context);
    if (s->loop) pw_thread_loop_destroy(s->loop);
    free(s);
}

/* Closes fd unless it no longer refers to the socket `original` (a duplicate of it, kept open
 * so that no other socket can have its inode meanwhile): PipeWire closed it, or not, on failure. */
static void close_if_still_open(int fd, int original) {
    struct stat a, b;
    if (fstat(original, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) close(fd);
}

mr_pw_screen_stream *mr_pw_screen_stream_open(int remote_fd, uint32_t node, const char *name,
                                              mr_pw_screen_stream_callbacks callbacks, char *error, size_t error_size) {
    pw_init(NULL, NULL);
    struct mr_pw_screen_stream *s = calloc(1, sizeof *s);
    if (s == NULL) {
        close(remote_fd);
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    s->callbacks = callbacks;
    const char *failed = NULL;
    int locked = 0, result = 0, saved_errno = 0, given = 0;
    if ((s->loop = pw_thread_loop_new(name, NULL)) == NULL) { failed = "cannot make a PipeWire thread loop"; goto fail; }
    if ((s->context = pw_context_new(pw_thread_loop_get_loop(s->loop), NULL, 0)) == NULL) { failed = "cannot make a PipeWire context"; goto fail; }
    if (pw_thread_loop_start(s->loop) < 0) { failed = "cannot start the PipeWire thread"; goto fail; }
    pw_thread_loop_lock(s->loop);
    locked = 1;
    /* PipeWire closes the descriptor with the core, and on most of its failures but not all (not
     * when it cannot make the core): a duplicate kept meanwhile tells whether it still is ours. */
    int original = fcntl(remote_fd, F_DUPFD_CLOEXEC, 0);
    if (original < 0) { failed = "cannot duplicate the PipeWire socket"; goto fail; }
    given = 1;
    s->core = pw_context_connect_fd(s->context, remote_fd, NULL, 0);
    if (s->core == NULL) {
        saved_errno = errno;
        close_if_still_open(remote_fd, original);
        close(original);
        errno = saved_errno;
        failed = "cannot connect to PipeWire";
        goto fail;
    }
    close(original);
    pw_core_add_listener(s->core, &s->core_listener, &core_events, s);
    s->stream = pw_stream_new(s->core, name, pw_properties_new(
        PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen", PW_KEY_NODE_NAME, name, NULL));
    if (s->stream == NULL) { failed = "cannot make a PipeWire stream"; goto fail; }
    pw_stream_add_listener(s->stream, &s->stream_listener, &stream_events, s);

    /* Raw 32-bit pixels of any size and rate; no modifier property, so no DMA-BUF is offered. */
    uint8_t bytes[1024];
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[1];
    params[0] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(9, SPA_VIDEO_FORMAT_BGRx,
            SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_RGBA,
            SPA_VIDEO_FORMAT_xRGB, SPA_VIDEO_FORMAT_ARGB, SPA_VIDEO_FORMAT_xBGR, SPA_VIDEO_FORMAT_ABGR),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&SPA_RECTANGLE(1920, 1080), &SPA_RECTANGLE(1, 1), &SPA_RECTANGLE(16384, 16384)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(30, 1), &SPA_FRACTION(0, 1), &SPA_FRACTION(1000, 1)));
    result = pw_stream_connect(s->stream, PW_DIRECTION_INPUT, node,
        PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS | PW_STREAM_FLAG_DONT_RECONNECT, params, 1);
    if (result < 0) {
        snprintf(error, error_size, "cannot connect a stream to PipeWire node %u: %s", node, spa_strerror(result));
        goto fail_said;
    }
    pw_thread_loop_unlock(s->loop);
    return s;

fail:
    saved_errno = errno;  /* before anything else can change it */
    snprintf(error, error_size, "%s: %s", failed, strerror(saved_errno));
fail_said:
    if (!given) close(remote_fd);
    if (locked) pw_thread_loop_unlock(s->loop);
    destroy(s);  /* the core, once made, closes the descriptor */
    return NULL;
}

void mr_pw_screen_stream_close(mr_pw_screen_stream *stream) {
    if (stream) destroy(stream);
}
