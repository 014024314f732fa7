#include <sbc/sbc.h>
