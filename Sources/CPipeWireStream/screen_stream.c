#include "CPipeWireStream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        int32_t stride = plane->chunk->stride > 0 ? plane->chunk->stride : (int32_t)width * 4;
        uint32_t offset = plane->maxsize > 0 ? plane->chunk->offset % plane->maxsize : 0;
        if ((uint64_t)offset + (uint64_t)stride * height <= plane->maxsize)
            s->callbacks.frame(s->callbacks.context, (const uint8_t *)plane->data + offset, width, height, stride, s->order);
    }
    pw_stream_queue_buffer(s->stream, latest);
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
    int locked = 0, result = 0;
    if ((s->loop = pw_thread_loop_new(name, NULL)) == NULL) { failed = "cannot make a PipeWire thread loop"; goto fail_before_connect; }
    if ((s->context = pw_context_new(pw_thread_loop_get_loop(s->loop), NULL, 0)) == NULL) { failed = "cannot make a PipeWire context"; goto fail_before_connect; }
    if (pw_thread_loop_start(s->loop) < 0) { failed = "cannot start the PipeWire thread"; goto fail_before_connect; }
    pw_thread_loop_lock(s->loop);
    locked = 1;
    /* Takes the descriptor, also when it fails. */
    if ((s->core = pw_context_connect_fd(s->context, remote_fd, NULL, 0)) == NULL) { failed = "cannot connect to PipeWire"; goto fail; }
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

fail_before_connect:
    close(remote_fd);
fail:
    snprintf(error, error_size, "%s: %s", failed, strerror(errno));
fail_said:
    if (locked) pw_thread_loop_unlock(s->loop);
    destroy(s);
    return NULL;
}

void mr_pw_screen_stream_close(mr_pw_screen_stream *stream) {
    if (stream) destroy(stream);
}
