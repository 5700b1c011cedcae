// The HTML report of a `kiln bench` run: one self-contained file (inline CSS and SVG, nothing
// fetched), per device a table and a bar chart of kiln's time beside each peer's, on a log scale
// when the times span more than two decades.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "bench_results.hpp"

namespace kiln::cli {
namespace {

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string us_html(double us) {
    return us >= 1000 ? fmt::format("{:.2f} ms", us / 1e3) : fmt::format("{:.2f} &micro;s", us);
}

// An axis tick: 1 us, 10 us, ..., 1 ms, ..., 1 s.
std::string tick_text(double us) {
    if (us >= 1e6) return fmt::format("{:g} s", us / 1e6);
    if (us >= 1e3) return fmt::format("{:g} ms", us / 1e3);
    return fmt::format("{:g} &micro;s", us);
}

constexpr const char* kPalette[] = {"#d9480f", "#1c7ed6", "#37b24d", "#ae3ec9",
                                    "#f59f00", "#0ca678", "#868e96"};

// The bar chart of one device: a group per case, kiln's bar first, then each peer's.
std::string chart(const DeviceRun& d, size_t index) {
    std::map<std::string, size_t> colour{{"kiln", 0}};
    double lo = 0, hi = 0;
    size_t bars = 0;
    for (const auto& r : d.results) {
        std::vector<double> times{r.kiln_us};
        for (const auto& p : r.peers) {
            times.push_back(p.us);
            colour.emplace(p.name, colour.size());
        }
        for (double t : times) {
            if (t <= 0) continue;
            lo = lo == 0 ? t : std::min(lo, t);
            hi = std::max(hi, t);
            ++bars;
        }
    }
    if (bars == 0) return "<p>No timings to chart.</p>\n";
    const bool log_scale = hi / lo > 100;
    const double axis_lo = log_scale ? std::floor(std::log10(lo)) : 0;
    const double axis_hi = log_scale ? std::ceil(std::log10(hi)) : hi * 1.05;
    const double label_w = 190, plot_w = 620, bar_h = 14, gap = 10, top = 30;
    auto x_of = [&](double us) {
        const double v = log_scale ? std::log10(us) : us;
        return label_w + plot_w * std::clamp((v - axis_lo) / (axis_hi - axis_lo), 0.0, 1.0);
    };
    std::string body;
    double y = top;
    for (const auto& r : d.results) {
        std::vector<std::pair<std::string, double>> series{{"kiln", r.kiln_us}};
        for (const auto& p : r.peers) series.emplace_back(p.name, p.us);
        const double group_h = bar_h * static_cast<double>(series.size());
        body += fmt::format(
            "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" class=\"label\">{}</text>\n",
            label_w - 8, y + group_h / 2 + 4, escape(r.name));
        for (const auto& [who, us] : series) {
            if (us > 0) {
                const double w = std::max(1.0, x_of(us) - label_w);
                body += fmt::format(
                    "<rect class=\"bar\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
                    "fill=\"{}\"><title>{}: {} {}</title></rect>\n",
                    label_w, y + 1, w, bar_h - 2, kPalette[colour[who] % 7], escape(r.name),
                    escape(who), us_html(us));
            }
            y += bar_h;
        }
        y += gap;
    }
    // Axis: decades on a log scale, five steps on a linear one.
    std::string axis;
    const double bottom = y;
    std::vector<double> ticks;
    if (log_scale)
        for (double e = axis_lo; e <= axis_hi; e += 1) ticks.push_back(std::pow(10.0, e));
    else
        for (int i = 0; i <= 5; ++i) ticks.push_back(axis_hi * i / 5);
    for (double t : ticks) {
        const double x = log_scale ? x_of(t) : label_w + plot_w * t / axis_hi;
        axis += fmt::format(
            "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2:.1f}\" class=\"grid\"/>\n"
            "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" class=\"tick\">{4}</text>\n",
            x, top - 6, bottom, bottom + 14, tick_text(t));
    }
    std::string legend;
    double lx = label_w;
    std::vector<std::pair<size_t, std::string>> order;
    for (const auto& [name, c] : colour) order.emplace_back(c, name);
    std::sort(order.begin(), order.end());
    for (const auto& [c, name] : order) {
        legend += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
            "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"label\">{}</text>\n",
            lx, bottom + 26, kPalette[c % 7], lx + 16, bottom + 36, escape(name));
        lx += 30 + 7.0 * static_cast<double>(name.size());
    }
    return fmt::format(
        "<svg id=\"chart-{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
        "height=\"{:.0f}\" role=\"img\" aria-label=\"time per call on {}, {} scale\">\n"
        "<text x=\"{}\" y=\"14\" class=\"label\">time per call, {} scale (shorter is "
        "faster)</text>\n{}{}{}</svg>\n",
        index, label_w + plot_w + 40, bottom + 48, escape(d.id), log_scale ? "log" : "linear",
        label_w, log_scale ? "log" : "linear", axis, body, legend);
}

std::string table(const DeviceRun& d) {
    std::string rows;
    for (const auto& r : d.results) {
        std::string peers;
        for (const auto& p : r.peers)
            peers +=
                fmt::format("{}{} {}", peers.empty() ? "" : "<br>", escape(p.name), us_html(p.us));
        const double ratio = kiln_over_best_peer(r);
        rows += fmt::format(
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
            "<td class=\"n\">{:.0f}% {}</td><td>{}</td><td class=\"n{}\">{}</td>"
            "<td class=\"n\">{:.0f} ms</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(r.name), escape(r.shape), us_html(r.kiln_us), rate_text(r),
            100 * rate_fraction(r, d), r.compute_bound ? "f32" : "copy",
            peers.empty() ? "-" : peers, ratio > 1 ? " behind" : "",
            ratio > 0 ? fmt::format("{:.3g}x", ratio) : "-", r.setup_ms, us_html(r.host_us),
            escape(r.schedule),
            !r.bit_identical   ? "not checked"
            : *r.bit_identical ? "yes"
                               : "NO");
    }
    return "<table><tr><th>case</th><th>shape</th><th>kiln</th><th>rate</th><th>of peak</th>"
           "<th>peers</th><th>kiln / best peer</th><th>setup (apart)</th><th>host per call</th>"
           "<th>schedule</th><th>bit-identical</th></tr>\n" +
           rows + "</table>\n";
}

}  // namespace

std::string bench_html(const BenchRun& run) {
    std::string sections;
    for (size_t i = 0; i < run.devices.size(); ++i) {
        const DeviceRun& d = run.devices[i];
        sections += fmt::format(
            "<section><h2>{}</h2>\n<p>Copy bandwidth {:.1f} GB/s, f32 rate {:.1f} GFLOP/s "
            "(measured by kiln on this device).</p>\n{}{}</section>\n",
            escape(d.id), d.bandwidth_gbs, d.gflops, chart(d, i), table(d));
    }
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>kiln bench {}</title>\n<style>\n"
        "body {{ font-family: sans-serif; margin: 2em; color: #212529; }}\n"
        "table {{ border-collapse: collapse; font-size: 13px; margin-top: 1em; }}\n"
        "td, th {{ border: 1px solid #dee2e6; padding: 3px 8px; text-align: left; }}\n"
        "td.n {{ text-align: right; white-space: nowrap; }}\n"
        "td.behind {{ color: #c92a2a; font-weight: bold; }}\n"
        ".label {{ font-size: 12px; }} .tick {{ font-size: 10px; fill: #495057; }}\n"
        ".grid {{ stroke: #dee2e6; }}\n</style></head><body>\n"
        "<h1>kiln bench</h1>\n<p>kiln commit <code>{}</code>, run {}. Times are medians of "
        "device-side timings of one call after warm-up; compile and tuning are excluded and "
        "shown apart; \"kiln / best peer\" below 1 means kiln is faster.</p>\n{}</body></html>\n",
        escape(run.date), escape(run.commit), escape(run.date), sections);
}

}  // namespace kiln::cli
