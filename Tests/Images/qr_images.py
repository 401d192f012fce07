#!/usr/bin/env python3
"""Images of QR codes for the door scanner's tests (Tests/AttestServerTests/BadgeScanTests.swift).

    qr_images.py OUT_DIR REQUEST.json

request.json: {"badge": TEXT, "other": TEXT, "modules": [[0|1, ...], ...]}: the badge token,
a QR code's text that is not a badge, and the modules of the badge's code as the server's
libqrencode drew them. Writes, each named for what it is:

- the badge drawn by the PyPI `qrcode` package (not the server's library) at 2, 4 and 10 px a
  module; turned 90° and 30°; blurred; as JPEG at quality 30, 70 and 95, and as WebP; small in
  a large photo-like frame (grey background, the code a fifth of it, slightly turned);
- the badge drawn from libqrencode's modules, as the badge page shows it, as PNG and JPEG;
- `not-a-badge.png` (another text), `blank.png` (no code), `too-many-pixels.png` (7,000 ×
  7,000, a 1-bit image a few KB in size), `too-wide.png` (20,000 × 1), `truncated.jpg` (the first
  half of a JPEG), `not-an-image.png` (text).
Prints the names written, one a line.
"""
import io
import json
import os
import sys

import qrcode
from PIL import Image, ImageFilter

out = sys.argv[1]
with open(sys.argv[2]) as f:
    request = json.load(f)
written = []


def save(image, name, **options):
    image.save(os.path.join(out, name), **options)
    written.append(name)


def drawn(text, box):
    code = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=box, border=4)
    code.add_data(text)
    code.make(fit=True)
    return code.make_image(fill_color="black", back_color="white").convert("L")


badge = drawn(request["badge"], 4)
for box in (2, 4, 10):
    save(drawn(request["badge"], box), f"qrcode-{box}px.png")
save(badge.rotate(90, expand=True), "qrcode-turned-90.png")
save(badge.rotate(30, expand=True, fillcolor=255), "qrcode-turned-30.png")
save(drawn(request["badge"], 6).filter(ImageFilter.GaussianBlur(1.2)), "qrcode-blurred.png")
for quality in (30, 70, 95):
    save(drawn(request["badge"], 6), f"qrcode-quality-{quality}.jpg", quality=quality)
save(drawn(request["badge"], 6), "qrcode.webp", quality=80)
photo = Image.new("L", (badge.width * 5, badge.height * 4), 150)
photo.paste(badge.rotate(8, expand=True, fillcolor=255), (badge.width * 2, badge.height))
save(photo, "qrcode-in-a-photo.jpg", quality=85)

modules = request["modules"]
scale, border = 6, 4
size = (len(modules) + 2 * border) * scale
server = Image.new("L", (size, size), 255)
for y, row in enumerate(modules):
    for x, dark in enumerate(row):
        if dark:
            server.paste(0, ((x + border) * scale, (y + border) * scale, (x + border + 1) * scale, (y + border + 1) * scale))
save(server, "libqrencode.png")
save(server, "libqrencode.jpg", quality=80)

save(drawn(request["other"], 4), "not-a-badge.png")
save(Image.new("L", (640, 480), 255), "blank.png")
save(Image.new("1", (7000, 7000), 1), "too-many-pixels.png")
save(Image.new("1", (20000, 1), 1), "too-wide.png")
whole = io.BytesIO()
drawn(request["badge"], 6).save(whole, "JPEG", quality=90)
with open(os.path.join(out, "truncated.jpg"), "wb") as f:
    f.write(whole.getvalue()[: len(whole.getvalue()) // 2])
written.append("truncated.jpg")
with open(os.path.join(out, "not-an-image.png"), "wb") as f:
    f.write(b"this is not an image, whatever its name says\n")
written.append("not-an-image.png")
print("\n".join(written))
