#include <stdint.h>
#include <x264.h>

/* x264_encoder_open is a token-pasting macro (x264_encoder_open_<BUILD>) that Swift cannot import. */
static inline x264_t *cx264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }
