// The QR code reader: zxing-cpp (Debian's libzxing-dev), behind one C function so the rest of
// the target stays C. It replaced ZBar, which spent 4.7 ms on a 640 × 480 camera frame where
// zxing-cpp spends about 1 ms, and found no code in a blank one after as long
// (Benchmarks/README.md, "Benchmarks/scan").
#define ZX_USE_UTF8 1

#include <cstring>
#include <new>

#include <ZXing/ReadBarcode.h>

#include "badge_image.h"

extern "C" int attest_read_qr(const unsigned char *pixels, int width, int height, char *out, size_t out_capacity,
                              size_t *out_length) {
    try {
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormat::QRCode);
        ZXing::Result result = ZXing::ReadBarcode({pixels, width, height, ZXing::ImageFormat::Lum}, hints);
        if (!result.isValid()) return ATTEST_SCAN_NO_CODE;
        // The code's bytes as they are, not a character set's reading of them.
        const ZXing::ByteArray &bytes = result.bytes();
        if (bytes.size() > out_capacity) return ATTEST_SCAN_TOO_LONG;
        if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
        *out_length = bytes.size();
        return ATTEST_SCAN_FOUND;
    } catch (const std::bad_alloc &) {
        return ATTEST_SCAN_NO_MEMORY;
    } catch (...) {
        // Whatever else the reader throws on a strange image is no code found, never a crash.
        return ATTEST_SCAN_NO_CODE;
    }
}
