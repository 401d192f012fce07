#include "badge_image.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

/// A grey image: one byte a pixel, rows of `width` bytes. `damaged`: the decoder warned (a
/// truncated JPEG decodes, its missing part grey); a code found in it still counts.
typedef struct {
    unsigned char *pixels;
    int width, height;
    int damaged;
} grey_image;

/// ATTEST_SCAN_UNREADABLE for an image without pixels (a JPEG of tables only), TOO_MANY_PIXELS
/// past the bounds (the sides checked before their product), else 0.
static int refused(long width, long height, long max_pixels, int max_side) {
    if (width <= 0 || height <= 0) return ATTEST_SCAN_UNREADABLE;
    if (width > max_side || height > max_side || width * height > max_pixels) return ATTEST_SCAN_TOO_MANY_PIXELS;
    return 0;
}

// MARK: JPEG (libjpeg-turbo): its errors longjmp back here, never exit().

typedef struct {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
} jpeg_failure;

static void jpeg_fail(j_common_ptr info) {
    jpeg_failure *failure = (jpeg_failure *)info->err;
    longjmp(failure->jump, 1);
}

/// Prints nothing; counts warnings (a truncated file, a corrupt stretch) as libjpeg's own does.
static void jpeg_quiet(j_common_ptr info, int level) {
    if (level < 0) info->err->num_warnings++;
}

static int decode_jpeg(const unsigned char *data, size_t size, long max_pixels, int max_side, int scan_side,
                       grey_image *image, int *width, int *height) {
    struct jpeg_decompress_struct info;
    jpeg_failure failure;
    unsigned char *volatile pixels = NULL;
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = jpeg_fail;
    failure.manager.emit_message = jpeg_quiet;
    if (setjmp(failure.jump)) {
        jpeg_destroy_decompress(&info);
        free(pixels);
        return ATTEST_SCAN_UNREADABLE;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    *width = (int)info.image_width;
    *height = (int)info.image_height;
    int refusal = refused(info.image_width, info.image_height, max_pixels, max_side);
    if (refusal) {
        jpeg_destroy_decompress(&info);
        return refusal;
    }
    info.out_color_space = JCS_GRAYSCALE;
    // The accurate integer DCT, libjpeg's default: the fast one's error, at the strong
    // compression of a phone's small frames, cost the reader (ZBar then) one badge in four at JPEG quality 30
    // (and more time in passes that found nothing than it saved).
    info.dct_method = JDCT_ISLOW;
    info.do_fancy_upsampling = FALSE;
    // libjpeg scales by 1/2, 1/4 or 1/8 while decoding, far cheaper than decoding it all.
    unsigned longer = info.image_width > info.image_height ? info.image_width : info.image_height;
    info.scale_num = 1;
    info.scale_denom = 1;
    while (info.scale_denom < 8 && longer / (info.scale_denom * 2) >= (unsigned)scan_side) info.scale_denom *= 2;
    jpeg_start_decompress(&info);
    size_t row = info.output_width;
    pixels = malloc(row * info.output_height);
    if (!pixels) {
        jpeg_destroy_decompress(&info);
        return ATTEST_SCAN_NO_MEMORY;
    }
    while (info.output_scanline < info.output_height) {
        JSAMPROW line = pixels + (size_t)info.output_scanline * row;
        jpeg_read_scanlines(&info, &line, 1);
    }
    jpeg_finish_decompress(&info);
    image->pixels = pixels;
    image->width = (int)info.output_width;
    image->height = (int)info.output_height;
    image->damaged = failure.manager.num_warnings > 0;
    jpeg_destroy_decompress(&info);
    return ATTEST_SCAN_FOUND;
}

// MARK: PNG (libpng's simplified API, which catches its own errors)

static int decode_png(const unsigned char *data, size_t size, long max_pixels, int max_side, grey_image *image, int *width,
                      int *height) {
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, data, size)) return ATTEST_SCAN_UNREADABLE;
    *width = (int)png.width;
    *height = (int)png.height;
    int refusal = refused(png.width, png.height, max_pixels, max_side);
    if (refusal) {
        png_image_free(&png);
        return refusal;
    }
    png.format = PNG_FORMAT_GRAY;
    unsigned char *pixels = malloc(PNG_IMAGE_SIZE(png));
    if (!pixels) {
        png_image_free(&png);
        return ATTEST_SCAN_NO_MEMORY;
    }
    // A transparent background is composed over white, as a screen shows it.
    png_color background = {255, 255, 255};
    if (!png_image_finish_read(&png, &background, pixels, 0, NULL)) {
        free(pixels);
        png_image_free(&png);
        return ATTEST_SCAN_UNREADABLE;
    }
    image->pixels = pixels;
    image->width = (int)png.width;
    image->height = (int)png.height;
    return ATTEST_SCAN_FOUND;
}

// MARK: WebP (libwebp: the luma plane is the grey image)

static int decode_webp(const unsigned char *data, size_t size, long max_pixels, int max_side, grey_image *image, int *width,
                       int *height) {
    int w = 0, h = 0;
    if (!WebPGetInfo(data, size, &w, &h)) return ATTEST_SCAN_UNREADABLE;
    *width = w;
    *height = h;
    int refusal = refused(w, h, max_pixels, max_side);
    if (refusal) return refusal;
    int stride = 0, uv_stride = 0;
    uint8_t *u = NULL, *v = NULL;
    uint8_t *luma = WebPDecodeYUV(data, size, &w, &h, &u, &v, &stride, &uv_stride);
    if (!luma) return ATTEST_SCAN_UNREADABLE;
    unsigned char *pixels = malloc((size_t)w * (size_t)h);
    if (!pixels) {
        WebPFree(luma);
        return ATTEST_SCAN_NO_MEMORY;
    }
    for (int y = 0; y < h; y++) memcpy(pixels + (size_t)y * (size_t)w, luma + (size_t)y * (size_t)stride, (size_t)w);
    WebPFree(luma);  // one allocation holds Y, U and V
    image->pixels = pixels;
    image->width = w;
    image->height = h;
    return ATTEST_SCAN_FOUND;
}

// MARK: Scaling down and scanning

/// `image` with each `factor` × `factor` block averaged into one pixel, in `scaled`.
static int averaged(const grey_image *image, int factor, grey_image *scaled) {
    int w = image->width / factor, h = image->height / factor;
    unsigned char *pixels = malloc((size_t)w * (size_t)h);
    if (!pixels) return ATTEST_SCAN_NO_MEMORY;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            unsigned sum = 0;
            for (int dy = 0; dy < factor; dy++) {
                const unsigned char *row = image->pixels + (size_t)(y * factor + dy) * (size_t)image->width + (size_t)x * factor;
                for (int dx = 0; dx < factor; dx++) sum += row[dx];
            }
            pixels[(size_t)y * (size_t)w + (size_t)x] = (unsigned char)(sum / (unsigned)(factor * factor));
        }
    }
    scaled->pixels = pixels;
    scaled->width = w;
    scaled->height = h;
    scaled->damaged = image->damaged;
    return ATTEST_SCAN_FOUND;
}

/// Scales `image` down in place so its longer side is at most `scan_side`.
static int scale_down(grey_image *image, int scan_side) {
    int longer = image->width > image->height ? image->width : image->height;
    int factor = (longer + scan_side - 1) / scan_side;
    if (factor <= 1 || image->width / factor < 1 || image->height / factor < 1) return ATTEST_SCAN_FOUND;
    grey_image scaled;
    int outcome = averaged(image, factor, &scaled);
    if (outcome != ATTEST_SCAN_FOUND) return outcome;
    free(image->pixels);
    *image = scaled;
    return ATTEST_SCAN_FOUND;
}

/// The first QR code in `image`, found by zxing-cpp (`qr_reader.cpp`).
int attest_read_qr(const unsigned char *pixels, int width, int height, char *out, size_t out_capacity, size_t *out_length);

int attest_scan_qr(const unsigned char *data, size_t size, long max_pixels, long max_whole_pixels, int max_side, int scan_side,
                   char *out, size_t out_capacity, size_t *out_length, int *width, int *height) {
    grey_image image = {NULL, 0, 0, 0};
    int decoded;
    *out_length = 0;
    *width = 0;
    *height = 0;
    if (scan_side < 64) scan_side = 64;
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        decoded = decode_jpeg(data, size, max_pixels, max_side, scan_side, &image, width, height);
    } else if (size >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0) {
        decoded = decode_png(data, size, max_whole_pixels, max_side, &image, width, height);
    } else if (size >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0) {
        decoded = decode_webp(data, size, max_whole_pixels, max_side, &image, width, height);
    } else {
        return ATTEST_SCAN_NOT_AN_IMAGE;
    }
    if (decoded != ATTEST_SCAN_FOUND) return decoded;
    int outcome = scale_down(&image, scan_side);
    if (outcome == ATTEST_SCAN_FOUND) outcome = attest_read_qr(image.pixels, image.width, image.height, out, out_capacity, out_length);
    if (outcome == ATTEST_SCAN_NO_CODE && image.damaged) outcome = ATTEST_SCAN_UNREADABLE;
    free(image.pixels);
    return outcome;
}
