#include <opus.h>

/* opus_encoder_ctl is variadic and its request codes are macros: typed wrappers for what we set. */
static inline int copus_set_bitrate(OpusEncoder *e, opus_int32 bps) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(bps)); }
static inline int copus_set_complexity(OpusEncoder *e, opus_int32 c) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(c)); }
