// svg_line_chart: axes from nice_ticks, one polyline per series, a legend.
#include "viz/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace saccade {
namespace {

// Matplotlib's "tab10" colours: distinct, and readable on white.
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Margins around the plot area, pixels: room for tick labels, axis labels and the title. The
// legend sits right of the plot, so it never hides a line: at least kLegend pixels, wider for
// long names (about kCharWidth pixels per character), at most half the chart.
constexpr double kLeft = 64, kTop = 32, kBottom = 44, kLegend = 150, kCharWidth = 6.5;

std::string tick_label(double value, double step) {
  char text[32];
  if (std::abs(value) < step * 1e-9) value = 0.0;
  if (step < 1e-3 || step >= 1e5) {
    std::snprintf(text, sizeof(text), "%.2g", value);  // every tick of the axis in one notation
  } else {
    // Enough decimals to tell neighbouring ticks apart, no more.
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  }
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int target) {
  if (high < low) std::swap(low, high);
  if (high - low < 1e-12 * std::max(1.0, std::abs(high))) {
    const double pad = low == 0 ? 1.0 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  const double rough = (high - low) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  const double fraction = rough / magnitude;
  const double step = (fraction <= 1.0   ? 1.0
                       : fraction <= 2.0 ? 2.0
                       : fraction <= 5.0 ? 5.0
                                         : 10.0) *
                      magnitude;
  const double first = std::floor(low / step + 1e-9);
  const double last = std::ceil(high / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; k += 1.0) ticks.push_back(k * step);
  return ticks;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
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
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// Where a chart's data lies, finite points only; empty() when there are none.
struct DataRange {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  double y_low = x_low, y_high = -x_low;
  bool whole_x = true;  // every x a whole number (epochs, steps)
  bool empty() const { return !std::isfinite(x_low); }
};

DataRange data_range(const std::vector<ChartSeries>& series) {
  DataRange range;
  for (const ChartSeries& line : series) {
    for (const auto& [x, y] : line.points) {
      range.whole_x = range.whole_x && x == std::floor(x);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      range.x_low = std::min(range.x_low, x), range.x_high = std::max(range.x_high, x);
      range.y_low = std::min(range.y_low, y), range.y_high = std::max(range.y_high, y);
    }
  }
  return range;
}

// The axes' ticks and the plot area's place in the chart, with the data-to-pixel mapping.
struct ChartFrame {
  std::vector<double> x_ticks, y_ticks;
  double x_step = 1, x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  double width = 0, height = 0, right = 0, plot_width = 0, plot_height = 0;
  double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * plot_width; }
  double py(double y) const { return kTop + (1.0 - (y - y0) / (y1 - y0)) * plot_height; }
};

ChartFrame chart_frame(const ChartOptions& options, const std::vector<ChartSeries>& series, DataRange range) {
  ChartFrame frame;
  frame.width = options.width, frame.height = options.height;
  // y spans whole ticks; x spans the data exactly (steps and epochs start and end where they do).
  frame.y_ticks = nice_ticks(range.y_low, range.y_high, 5);
  const std::vector<double> x_span = nice_ticks(range.x_low, range.x_high, 6);
  if (range.x_high == range.x_low) range.x_low = x_span.front(), range.x_high = x_span.back();
  // Whole-number data (epochs, steps) gets whole-number ticks only.
  for (const double x : x_span) {
    const bool inside =
        x >= range.x_low - 1e-9 * std::abs(range.x_low) && x <= range.x_high + 1e-9 * std::abs(range.x_high);
    if (inside && (!range.whole_x || std::abs(x - std::round(x)) < 1e-9)) frame.x_ticks.push_back(x);
  }
  frame.x_step = range.whole_x ? std::max(1.0, x_span[1] - x_span[0]) : x_span[1] - x_span[0];
  frame.x0 = range.x_low, frame.x1 = range.x_high;
  frame.y0 = frame.y_ticks.front(), frame.y1 = frame.y_ticks.back();
  size_t longest_name = 0;
  for (const ChartSeries& line : series) longest_name = std::max(longest_name, line.name.size());
  frame.right = std::min(frame.width / 2, std::max(kLegend, 30 + kCharWidth * longest_name));
  frame.plot_width = frame.width - kLeft - frame.right;
  frame.plot_height = frame.height - kTop - kBottom;
  return frame;
}

// Grid lines, tick labels, the plot's border and the axis labels.
void draw_axes(std::ostream& svg, const ChartFrame& frame, const ChartOptions& options) {
  for (const double y : frame.y_ticks) {
    svg << "<line x1=\"" << number(kLeft) << "\" x2=\"" << number(frame.width - frame.right) << "\" y1=\""
        << number(frame.py(y)) << "\" y2=\"" << number(frame.py(y)) << "\" stroke=\"#e5e5e5\"/>\n";
    svg << "<text x=\"" << number(kLeft - 6) << "\" y=\"" << number(frame.py(y) + 4)
        << "\" text-anchor=\"end\">" << tick_label(y, frame.y_ticks[1] - frame.y_ticks[0]) << "</text>\n";
  }
  for (const double x : frame.x_ticks) {
    svg << "<text x=\"" << number(frame.px(x)) << "\" y=\"" << number(frame.height - kBottom + 16)
        << "\" text-anchor=\"middle\">" << tick_label(x, frame.x_step) << "</text>\n";
  }
  svg << "<rect x=\"" << number(kLeft) << "\" y=\"" << number(kTop) << "\" width=\""
      << number(frame.plot_width) << "\" height=\"" << number(frame.plot_height)
      << "\" fill=\"none\" stroke=\"#999\"/>\n";
  svg << "<text x=\"" << number(kLeft + frame.plot_width / 2) << "\" y=\"" << number(frame.height - 8)
      << "\" text-anchor=\"middle\">" << xml_escape(options.x_label) << "</text>\n";
  if (!options.y_label.empty()) {
    svg << "<text transform=\"translate(14," << number(kTop + frame.plot_height / 2)
        << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(options.y_label) << "</text>\n";
  }
}

// One series as a polyline (a circle when it has one point) with its legend entry, the
// `drawn`-th; false when it has no finite point (nothing drawn).
bool draw_series(std::ostream& svg, const ChartFrame& frame, const ChartSeries& line, int drawn) {
  std::ostringstream points;
  int count = 0;
  for (const auto& [x, y] : line.points) {
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    points << (count++ ? " " : "") << number(frame.px(x)) << "," << number(frame.py(y));
  }
  if (count == 0) return false;
  const char* colour = kColours[drawn % (sizeof(kColours) / sizeof(kColours[0]))];
  svg << "<g class=\"series\" data-name=\"" << xml_escape(line.name) << "\">";
  if (count == 1) {
    const std::string point = points.str();
    const size_t comma = point.find(',');
    svg << "<circle cx=\"" << point.substr(0, comma) << "\" cy=\"" << point.substr(comma + 1)
        << "\" r=\"3\" fill=\"" << colour << "\"/>";
  } else {
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\""
        << points.str() << "\"/>";
  }
  const double legend_x = frame.width - frame.right + 10, legend_y = kTop + 8 + 14 * drawn;
  svg << "<line x1=\"" << number(legend_x) << "\" x2=\"" << number(legend_x + 16) << "\" y1=\""
      << number(legend_y - 4) << "\" y2=\"" << number(legend_y - 4) << "\" stroke=\"" << colour
      << "\" stroke-width=\"2\"/><text x=\"" << number(legend_x + 20) << "\" y=\"" << number(legend_y)
      << "\">" << xml_escape(line.name) << "</text></g>\n";
  return true;
}

}  // namespace

std::string svg_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series) {
  const double width = options.width, height = options.height;
  const DataRange range = data_range(series);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << options.width
      << "\" height=\"" << options.height << "\" viewBox=\"0 0 " << options.width << " " << options.height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<title>" << xml_escape(options.title) << "</title>\n";
  svg << "<text x=\"" << number(width / 2) << "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\" "
      << "font-weight=\"bold\">" << xml_escape(options.title) << "</text>\n";
  if (range.empty()) {
    svg << "<text x=\"" << number(width / 2) << "\" y=\"" << number(height / 2)
        << "\" text-anchor=\"middle\" fill=\"#777\">no data yet</text>\n</svg>\n";
    return svg.str();
  }
  const ChartFrame frame = chart_frame(options, series, range);
  draw_axes(svg, frame, options);
  int drawn = 0;
  for (const ChartSeries& line : series) drawn += draw_series(svg, frame, line, drawn) ? 1 : 0;
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace saccade
