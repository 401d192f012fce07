#ifndef ATTEST_BADGE_IMAGE_H
#define ATTEST_BADGE_IMAGE_H

#include <stddef.h>

/// What `attest_scan_qr` found.
enum attest_scan_outcome {
    ATTEST_SCAN_FOUND = 1,         ///< a QR code: its bytes are in `out`
    ATTEST_SCAN_NO_CODE = 0,       ///< a readable image without a QR code the reader could read
    ATTEST_SCAN_NOT_AN_IMAGE = -1, ///< neither JPEG, PNG nor WebP by its first bytes
    ATTEST_SCAN_UNREADABLE = -2,   ///< says it is one but does not decode (truncated, corrupt)
    ATTEST_SCAN_TOO_MANY_PIXELS = -3, ///< wider or taller than `max_side`, or more pixels than allowed
    ATTEST_SCAN_NO_MEMORY = -4,
    ATTEST_SCAN_TOO_LONG = -5,     ///< a QR code whose text is longer than `out_capacity`
};

/// Finds the first QR code in a JPEG, PNG or WebP image held in `data`: decodes it to grey
/// (libjpeg-turbo, libpng's simplified API, libwebp), refusing from its header alone an image
/// with a side over `max_side`, a JPEG of more than `max_pixels` pixels (decoded at 1/2 to 1/8
/// scale, so its memory stays small) or a PNG or WebP of more than `max_whole_pixels` (decoded
/// whole, a byte or two a pixel): no decompression bomb. It scales it
/// down so its longer side is at most `scan_side`, and reads it with zxing-cpp (QR codes only; `qr_reader.cpp`).
/// Errors in the decoders are caught here (libjpeg's by setjmp in this file); nothing is printed.
/// Thread-safe: every call makes its own decoder and scanner. The image's size is written to
/// `width` and `height` when its header was read.
int attest_scan_qr(const unsigned char *data, size_t size, long max_pixels, long max_whole_pixels, int max_side, int scan_side,
                   char *out, size_t out_capacity, size_t *out_length, int *width, int *height);

#endif
