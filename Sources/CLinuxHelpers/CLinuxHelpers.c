/* Header-only: see include/CLinuxHelpers.h. */
