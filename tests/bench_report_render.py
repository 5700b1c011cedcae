#!/usr/bin/env python3
"""ctest entry bench_report_render: renders a `kiln bench --quick --report` file in headless
Chromium (scripts/render_report.sh) and checks that the browser drew the chart: the DOM it built
holds the SVG with one bar per timing, and the screenshot holds pixels of kiln's bar colour and of
the peers' colour. Skips (exit 77) with a message where chromium is not installed.

  bench_report_render.py KILN_BINARY SOURCE_DIR WORK_DIR
"""
import os
import re
import struct
import subprocess
import sys
import zlib

KILN_RGB = (0xD9, 0x48, 0x0F)  # kPalette[0] in tools/kiln/bench_report.cpp
PEER_RGB = (0x1C, 0x7E, 0xD6)  # kPalette[1]: the first peer


def fail(message):
    sys.exit(f"bench_report_render: {message}")


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    at, idat = 8, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    if depth != 8 or colour not in (2, 6) or interlace:
        fail(f"unexpected PNG format: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def main():
    kiln, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    if not any(os.access(os.path.join(d, b), os.X_OK) for d in os.environ.get("PATH", "").split(":")
               for b in ("chromium", "chromium-browser")):
        print("bench_report_render: SKIPPED: chromium is not installed (apt-get install chromium)")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    html, png, dom = (os.path.join(work, f) for f in ("render.html", "render.png", "render-dom.html"))
    run = subprocess.run([kiln, "bench", "--device", "cpu", "--quick", "--cases",
                          "copy,softmax,matmul_small", "--report", html],
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        fail(f"kiln bench exited {run.returncode}: {run.stderr}")
    env = dict(os.environ, KILN_RENDER_WINDOW="1000,1000")
    render = subprocess.run([os.path.join(source, "scripts", "render_report.sh"), html, png, dom],
                            capture_output=True, text=True, timeout=300, env=env)
    if render.returncode != 0:
        fail(f"render_report.sh exited {render.returncode}: {render.stderr}")
    tree = open(dom).read()
    svg = re.search(r'<svg id="chart-0" class="chart".*?</svg>', tree, re.S)
    if not svg:
        fail("the DOM Chromium built has no chart")
    bars = svg.group(0).count('class="bar"')
    if bars < 4:  # kiln's three bars and at least the copy's and softmax's OpenMP peers
        fail(f"the chart has {bars} bars")
    width, height, rows = png_pixels(png)

    def count(rgb):
        return sum(1 for row in rows for p in row if all(abs(a - b) <= 8 for a, b in zip(p, rgb)))

    kiln_px, peer_px = count(KILN_RGB), count(PEER_RGB)
    if kiln_px < 50 or peer_px < 50:
        fail(f"the screenshot ({width}x{height}) shows {kiln_px} pixels of kiln's bar colour and "
             f"{peer_px} of the peers'; expected the bars drawn")
    print(f"bench_report_render: {bars} bars in the DOM; {kiln_px} kiln and {peer_px} peer pixels")


if __name__ == "__main__":
    main()
