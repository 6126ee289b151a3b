#!/usr/bin/env python3
"""plot_svg.py: draw the benchmark CSV (bench.cu output) as an SVG, no plotting
library needed (matplotlib is not installed where this was written).

    python3 plot_svg.py results/h100.csv results/h100.svg

Panels: point lookups vs build size, build time vs build size, range lookups
(ns per hit) vs expected hits, Zipf skew.  Log scales where the data spans
decades.
"""
import csv
import math
import sys
from collections import defaultdict

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    return rows


def series(rows, section, bits, variants, xkey, ykey, filt=None):
    out = defaultdict(list)
    for r in rows:
        if r["section"] != section or int(r["key_bits"]) != bits:
            continue
        if r["variant"] not in variants:
            continue
        if filt and not filt(r):
            continue
        out[r["variant"]].append((float(r[xkey]), float(r[ykey])))
    for v in out:
        out[v].sort()
    return out


def panel(x0, y0, w, h, title, xlabel, ylabel, data, logx=False, logy=True):
    parts = []
    pts = [p for s in data.values() for p in s if p[1] > 0]
    if not pts:
        return ""
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(v)) if logy else (lambda v: v)
    xmin, xmax = fx(min(xs)), fx(max(xs))
    ymin, ymax = fy(min(ys)), fy(max(ys))
    if logy:
        ymin, ymax = math.floor(ymin), math.ceil(ymax)
    if xmax == xmin:
        xmax += 1
    if ymax == ymin:
        ymax += 1
    L, R, T, B = 60, 10, 30, 45
    pw, ph = w - L - R, h - T - B

    def X(v):
        return x0 + L + (fx(v) - xmin) / (xmax - xmin) * pw

    def Y(v):
        return y0 + T + ph - (fy(v) - ymin) / (ymax - ymin) * ph

    parts.append(f'<rect x="{x0 + L}" y="{y0 + T}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    parts.append(f'<text x="{x0 + w / 2}" y="{y0 + 18}" text-anchor="middle" font-size="14" font-weight="bold">{title}</text>')
    parts.append(f'<text x="{x0 + L + pw / 2}" y="{y0 + h - 8}" text-anchor="middle" font-size="12">{xlabel}</text>')
    parts.append(f'<text x="{x0 + 14}" y="{y0 + T + ph / 2}" text-anchor="middle" font-size="12" '
                 f'transform="rotate(-90 {x0 + 14} {y0 + T + ph / 2})">{ylabel}</text>')
    # y ticks
    if logy:
        for e in range(int(ymin), int(ymax) + 1):
            yy = y0 + T + ph - (e - ymin) / (ymax - ymin) * ph
            parts.append(f'<line x1="{x0 + L}" x2="{x0 + L + pw}" y1="{yy}" y2="{yy}" stroke="#ddd"/>')
            parts.append(f'<text x="{x0 + L - 4}" y="{yy + 4}" text-anchor="end" font-size="10">{10 ** e:g}</text>')
    # x ticks at data points
    for xv in sorted(set(xs)):
        xx = X(xv)
        parts.append(f'<text x="{xx}" y="{y0 + T + ph + 14}" text-anchor="middle" font-size="10">{xv:g}</text>')
    for i, (name, s) in enumerate(sorted(data.items())):
        c = COLORS[i % len(COLORS)]
        s = [p for p in s if p[1] > 0]
        d = " ".join(f"{'M' if j == 0 else 'L'}{X(p[0]):.1f},{Y(p[1]):.1f}" for j, p in enumerate(s))
        parts.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="2"/>')
        for p in s:
            parts.append(f'<circle cx="{X(p[0]):.1f}" cy="{Y(p[1]):.1f}" r="2.5" fill="{c}"/>')
        parts.append(f'<text x="{x0 + L + 6}" y="{y0 + T + 14 + 13 * i}" font-size="11" fill="{c}">{name}</text>')
    return "\n".join(parts)


def main():
    rows = load(sys.argv[1])
    out = sys.argv[2]
    W, H = 620, 420
    panels = []
    look = ["thrust_lower_bound", "bs_textbook", "ebs", "ebs_pin64k", "eks_single_soa",
            "eks_single_soa_pin200k_1blk", "eks_group_soa"]
    points = series(rows, "lookup", 32, look, "log2n", "ms")
    # the point fast paths (section "fast"): sorted lookups with the fused write-back, EBS in shared memory
    for v, pts in series(rows, "fast", 32, ["eks_gsort16_fused", "ebs_smem_q4"], "log2n", "ms").items():
        points["fast: " + v] = pts
    panels.append(("Point lookups, 2^25 random, 32-bit", "log2(build size)", "ms", points, False, True))
    panels.append(("Build (sort + Eytzinger), 32-bit keys, 64-bit payloads", "log2(build size)", "ms",
                   series(rows, "build", 32, ["cub_sort_pairs", "build_ebs_soa", "build_eks9_soa", "build_eks9_aos"],
                          "log2n", "ms"), False, True))
    panels.append(("Range lookups, 2^28 keys (CSR pipeline)", "expected hits per lookup", "ns per hit",
                   series(rows, "range", 32, ["bs_textbook", "ebs_hybrid", "eks_single_soa", "eks_group_soa"],
                          "param", "per_unit_ns"), True, True))
    panels.append(("Zipf-skewed lookups, 2^28 keys", "Zipf exponent", "ms",
                   series(rows, "zipf", 32, ["thrust_lower_bound", "ebs", "eks_single_soa", "eks_single_soa_pin16k",
                                             "eks_group_soa"], "param", "ms"), False, True))
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{2 * H}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>']
    for i, (t, xl, yl, d, lx, ly) in enumerate(panels):
        svg.append(panel((i % 2) * W, (i // 2) * H, W, H, t, xl, yl, d, lx, ly))
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg))


if __name__ == "__main__":
    main()
