#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, and its encoding header then pulls in the system's ICU, whose
// declarations clash with the copy inside Foundation. Nothing here uses libxml2's ICU converters
// (and only pointers to the structures that hold them), so the header is read without them.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
